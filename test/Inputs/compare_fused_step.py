"""Runs two artifacts of one training step, compiled without and with
trc-fuse (then trc-unfuse), on the same inputs and compares every output
(test/Passes/Fusion/fuse-unfuse-execution.test).

    python3 compare_fused_step.py TRC_RUN PLAIN_ARTIFACT FUSED_ARTIFACT WORKDIR [--tolerance T]

Inputs are the plain artifact's input slots (manifest.trc): token ids in
[0, 8), small normal floats, positive second moments (adam.v:*), learning
rate 1e-3 and step 3. Outputs match within 1e-5 (or --tolerance) of each
one's largest magnitude.
"""
import os
import subprocess
import sys

import numpy as np

trc_run, plain, fused, work = sys.argv[1:5]
# A mixed-precision step rounds to 16 bits, where one sum order or another
# moves an element by a 16-bit ulp: --tolerance 1e-4 there.
tolerance = float(sys.argv[6]) if len(sys.argv) > 6 and sys.argv[5] == "--tolerance" else 1e-5
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)
args = []
for line in open(os.path.join(plain, "manifest.trc")):
    fields = line.split()
    if fields[:1] != ["slot"] or fields[2] != "input":
        continue
    name, dtype, rank = fields[3], fields[4], int(fields[5])
    shape = [int(d) for d in fields[6:6 + rank]]
    if dtype in ("i64", "i32"):
        value = rng.integers(0, 8, shape).astype(np.int64 if dtype == "i64" else np.int32)
    elif name == "trc.lr":
        value = np.array(1e-3, np.float32)
    elif name == "trc.step":
        value = np.array(3.0, np.float32)
    elif name.startswith("adam.v:"):
        value = (rng.random(shape) * 1e-4).astype(np.float32)
    else:
        value = (rng.standard_normal(shape) * 1e-2).astype(np.float32)
    path = os.path.join(work, name.replace(":", "_").replace("/", "_") + ".npy")
    np.save(path, value)
    args += ["--input", f"{name}={path}"]

outputs = {}
for tag, artifact in (("plain", plain), ("fused", fused)):
    out = os.path.join(work, tag)
    subprocess.run([trc_run, artifact, *args, "--output-dir", out], check=True)
    outputs[tag] = {f: np.load(os.path.join(out, f)) for f in sorted(os.listdir(out))}

names = sorted(outputs["plain"])
same_names = names == sorted(outputs["fused"])
worst = 0.0
for f in names:
    a, b = outputs["plain"][f], outputs["fused"].get(f)
    if b is None or a.shape != b.shape:
        same_names = False
        continue
    scale = max(float(np.abs(a).max()), 1e-30)
    worst = max(worst, float(np.abs(a - b).max()) / scale)
# 1e-5 of each output's largest magnitude: the CPU program sums rows in
# vectorized partial sums (trc-vectorizable-loops), the emulated CUDA
# kernels per thread; a wrong kernel is off by far more.
print(f"outputs {len(names)}, same outputs {same_names}, match {same_names and worst <= tolerance} "
      f"(worst {worst:.1e} of an output's largest magnitude)")
