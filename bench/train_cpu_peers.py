#!/usr/bin/env python3
"""Training step time on the CPU against both peers in one run: trc-run,
onnxruntime-training (on-device training API, AdamW artifacts) and PyTorch
train the same GPT-2-style model on the same batches with the same threads;
then bench/forward_cpu.py times the forward against onnxruntime inference.

    .venv/bin/python bench/train_cpu_peers.py [--batch 8] [--seq 128] [--steps 12]
        [--threads 2] [--size bench] [--build build] [--ort-python /work/ort-venv/bin/python]
        [--no-forward]

onnxruntime-training conflicts with the onnxruntime package (.venv has the
latter), so it runs in its own virtual environment, made with
    python3 -m venv --system-site-packages /work/ort-venv
    /work/ort-venv/bin/pip install onnxruntime-training-cpu==1.19.2 'numpy<2' onnx
(system site packages: its training module imports torch). Step time: the
mean over the steps after the first two, each engine in its own process
(bench/train_cpu.py's measurement for trc and PyTorch). Run it under the
shared lock (flock /tmp/trc-build.lock): OpenMP collapses under contention.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from train_cpu import TORCH_CHILD, run_measured, write_bench_text  # noqa: E402

ORT_CHILD = r"""
import json, os, sys, time
import numpy as np, onnx, onnxruntime as ort
from onnxruntime.training import artifacts
from onnxruntime.training.api import CheckpointState, Module, Optimizer
model_path, out, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
batch, seq, steps, data = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
trainable = set(json.loads(sys.argv[8]))
m = onnx.load(model_path)
os.makedirs(out, exist_ok=True)
# ORT's layer-norm gradient reads the forward's saved mean and 1/std: name them.
for node in m.graph.node:
    if node.op_type == "LayerNormalization" and len(node.output) == 1:
        node.output.extend([node.output[0] + "_mean", node.output[0] + "_inv_std"])
names = [i.name for i in m.graph.initializer]
artifacts.generate_artifacts(m, requires_grad=[n for n in names if n in trainable],
                             frozen_params=[n for n in names if n not in trainable],
                             loss=None, optimizer=artifacts.OptimType.AdamW,
                             artifact_directory=out)
options = ort.SessionOptions()
options.intra_op_num_threads = threads
options.inter_op_num_threads = 1
state = CheckpointState.load_checkpoint(os.path.join(out, "checkpoint"))
module = Module(os.path.join(out, "training_model.onnx"), state,
                os.path.join(out, "eval_model.onnx"), device="cpu", session_options=options)
opt = Optimizer(os.path.join(out, "optimizer_model.onnx"), module)
opt.set_learning_rate(1e-3)
module.train()
tokens = np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64)
pos, bt, times, losses = 0, batch * seq, [], []
for _ in range(steps):
    if pos + bt + 1 > len(tokens): pos = 0
    w = tokens[pos:pos + bt + 1]; pos += bt
    x, y = w[:-1].reshape(batch, seq).copy(), w[1:].reshape(batch, seq).copy()
    start = time.perf_counter()
    loss = module(x, y); opt.step(); module.lazy_reset_grad()
    times.append((time.perf_counter() - start) * 1e3); losses.append(float(loss))
print(json.dumps({"times": times, "losses": losses}))
"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", default="bench")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--ort-python", default="/work/ort-venv/bin/python")
    p.add_argument("--no-forward", action="store_true", help="skip bench/forward_cpu.py")
    a = p.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads),
               TRC_NUM_THREADS=str(a.threads))
    tmp = tempfile.mkdtemp(prefix="trc-peers-bench-")
    data = write_bench_text(os.path.join(tmp, "data.txt"))
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import export_models as em
    em.configure(a.size)
    model = em.build("gpt2")
    trainable = [n for n, _ in model.named_parameters()]
    dyn_path, static_path = os.path.join(tmp, "gpt2.onnx"), os.path.join(tmp, "gpt2_static.onnx")
    em.export(model, dyn_path, 17, dynamic=True)
    em.EXAMPLE_SHAPE[:] = [a.batch, a.seq]
    em.export(model, static_path, 17, dynamic=False)

    mean = lambda xs: sum(xs[2:]) / len(xs[2:])
    results = {}
    out, _ = run_measured([sys.executable, "-c", TORCH_CHILD, ROOT, a.size, str(a.threads),
                           str(a.batch), str(a.seq), str(a.steps), data], env)
    results["pytorch"] = json.loads(out)
    if os.path.exists(a.ort_python):
        out, _ = run_measured([a.ort_python, "-c", ORT_CHILD, static_path,
                               os.path.join(tmp, "ort"), str(a.threads), str(a.batch),
                               str(a.seq), str(a.steps), data, json.dumps(trainable)], env)
        results["ort-training"] = json.loads(out)
    else:
        print(f"note: {a.ort_python} missing: onnxruntime-training skipped (see --help)")
    # trc as it chooses its f32 GEMM (its own AVX-512 kernel, PackedGemm.h,
    # unless OpenBLAS runs AVX-512 kernels itself), then each forced:
    # TRC_CPU_GEMM=packed and =openblas (OpenBLAS's kernels follow
    # OPENBLAS_CORETYPE when the environment sets it).
    for name, gemm in (("trc", None), ("trc-packed", "packed"), ("trc-openblas", "openblas")):
        metrics = os.path.join(tmp, name + ".jsonl")
        run_env = dict(env, TRC_CPU_GEMM=gemm) if gemm else env
        run_measured([os.path.join(a.build, "tools/trc-run/trc-run"), dyn_path, "--device", "cpu",
                      "--data", data, "--batch-size", str(a.batch), "--seq-len", str(a.seq),
                      "--steps", str(a.steps), "--lr", "1e-3", "--metrics", metrics], run_env)
        lines = [json.loads(l) for l in open(metrics)]
        results[name] = {"times": [l["step_time_ms"] for l in lines],
                         "losses": [l["loss"] for l in lines]}

    t_trc = mean(results["trc"]["times"])
    print(f"model: GPT-2-style ({a.size}), batch {a.batch}, sequence {a.seq}, fp32, AdamW, "
          f"{a.threads} threads, {a.steps} steps (mean of steps 3..{a.steps}); "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    print(f"{'engine':<13} {'step ms':>9} {'loss step 1':>12} {'loss last':>10} {'engine/trc':>11}")
    for name in ("trc", "trc-packed", "trc-openblas", "ort-training", "pytorch"):
        if name in results:
            r = results[name]
            print(f"{name:<13} {mean(r['times']):9.1f} {r['losses'][0]:12.4f} {r['losses'][-1]:10.4f} "
                  f"{mean(r['times']) / t_trc:10.2f}x")
    if not a.no_forward:
        fwd = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "forward_cpu.py"),
                              "--batch", str(a.batch), "--seq", str(a.seq),
                              "--threads", str(a.threads), "--size", a.size, "--build", a.build],
                             capture_output=True, text=True, env=env)
        print("forward (bench/forward_cpu.py):")
        print(fwd.stdout.rstrip() if fwd.returncode == 0 else fwd.stderr[-2000:])


if __name__ == "__main__":
    main()
