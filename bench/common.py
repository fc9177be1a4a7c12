"""What the bench scripts share: where trc-run is, the bench GPT-2 export
(scripts/export_models.py), training text, and one trc-run training run
read back through its --metrics lines.

    import common
    model = common.export_gpt2(work, "bench")
    run = common.train(common.TRC_RUN, model, common.text_data(work), work, "plain",
                       batch=8, seq=128, steps=20)
"""
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
TRC_RUN = os.path.join(ROOT, "build", "tools", "trc-run", "trc-run")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import export_models as em  # noqa: E402


def export_gpt2(work, size="bench", name="gpt2.onnx", dynamic=True, init="gpt2",
                example_shape=None):
    """GPT-2 of export_models' `size` exported to work/name (opset 17; traced
    at `example_shape` [batch, seq] when given)."""
    import warnings
    warnings.filterwarnings("ignore")
    em.configure(size)
    if example_shape:
        em.EXAMPLE_SHAPE[:] = list(example_shape)
    path = os.path.join(work, name)
    em.export(em.build("gpt2", init=init), path, 17, dynamic)
    return path


def text_data(work, chars=400000):
    """The first `chars` characters of tinyshakespeare as work/data.txt."""
    path = os.path.join(work, "data.txt")
    with open(os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")) as f:
        text = f.read()[:chars]
    with open(path, "w") as f:
        f.write(text)
    return path


def train(trc_run, model, data, work, name, batch, seq, steps, extra=()):
    """One CPU training run with --metrics: its lines, wall seconds, stderr."""
    metrics = os.path.join(work, name + ".jsonl")
    start = time.time()
    done = subprocess.run(
        [trc_run, model, "--device", "cpu", "--data", data, "--batch-size", str(batch),
         "--seq-len", str(seq), "--steps", str(steps), "--metrics", metrics, *extra],
        capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{name}: trc-run failed: {done.stderr[-2000:]}")
    wall = time.time() - start
    with open(metrics) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    return {"lines": lines, "wall_s": wall, "stderr": done.stderr}
