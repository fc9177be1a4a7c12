#!/usr/bin/env python3
"""Training step time and peak memory on the CPU, side by side in one run:
trc-run against PyTorch 1.13 (Debian's python3-torch) training the same
GPT-2-style model with AdamW on the same batches, same thread count.

    .venv/bin/python bench/train_cpu.py [--batch 8] [--seq 256] [--steps 12]
        [--threads 2] [--size bench] [--build build]

Step time: the mean over the steps after the first two (trc-run's
--metrics step_time_ms; PyTorch timed around zero_grad/forward/backward/
step). Peak memory: each engine runs in its own process; the peak resident
set comes from getrusage of that child. trc's time includes no compilation.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TORCH_CHILD = r"""
import json, os, sys, time
import numpy as np, torch
sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
import export_models as em
em.configure(sys.argv[2]); torch.set_num_threads(int(sys.argv[3]))
batch, seq, steps, data = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
torch.manual_seed(0)
model = em.build("gpt2")
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64)
pos, bt, times, losses = 0, batch * seq, [], []
for _ in range(steps):
    if pos + bt + 1 > len(tokens): pos = 0
    w = torch.tensor(tokens[pos:pos + bt + 1]); pos += bt
    x, y = w[:-1].view(batch, seq), w[1:].view(batch, seq)
    start = time.perf_counter()
    opt.zero_grad(); loss = model(x, y); loss.backward(); opt.step()
    times.append((time.perf_counter() - start) * 1e3); losses.append(float(loss))
print(json.dumps({"times": times, "losses": losses}))
"""


def run_measured(cmd, env):
    """Runs `cmd`; returns (stdout, peak RSS of that child in KiB)."""
    with tempfile.TemporaryFile("w+") as out:
        child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode != 0:
            sys.exit(f"error: {cmd[0]} exited with {child.returncode}")
        out.seek(0)
        return out.read(), usage.ru_maxrss


def write_bench_text(path):
    """The benchmarks' token stream: tiny Shakespeare from ../shared/data,
    else this README repeated; returns `path`."""
    shakespeare = os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")
    with open(path, "wb") as f:
        f.write(open(shakespeare, "rb").read() if os.path.exists(shakespeare)
                else open(os.path.join(ROOT, "README.md"), "rb").read() * 50)
    return path


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", default="bench")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    a = p.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads),
               TRC_NUM_THREADS=str(a.threads))
    tmp = tempfile.mkdtemp(prefix="trc-train-bench-")
    data = write_bench_text(os.path.join(tmp, "data.txt"))
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import export_models as em
    em.configure(a.size)
    model_path = os.path.join(tmp, "gpt2.onnx")
    em.export(em.build("gpt2"), model_path, 17, dynamic=True)

    # PyTorch first (its peak RSS is then the children's maximum so far).
    out, torch_rss = run_measured([sys.executable, "-c", TORCH_CHILD, ROOT, a.size,
                                   str(a.threads), str(a.batch), str(a.seq), str(a.steps), data],
                                  env)
    torch_result = json.loads(out)
    metrics = os.path.join(tmp, "m.jsonl")
    start = time.perf_counter()
    _, trc_rss = run_measured([os.path.join(a.build, "tools/trc-run/trc-run"), model_path,
                               "--device", "cpu", "--data", data, "--batch-size", str(a.batch),
                               "--seq-len", str(a.seq), "--steps", str(a.steps), "--lr", "1e-3",
                               "--metrics", metrics], env)
    trc_total = time.perf_counter() - start
    lines = [json.loads(l) for l in open(metrics)]
    trc_times = [l["step_time_ms"] for l in lines]
    mean = lambda xs: sum(xs[2:]) / len(xs[2:])
    t_trc, t_torch = mean(trc_times), mean(torch_result["times"])
    print(f"model: GPT-2-style ({a.size}), batch {a.batch}, sequence {a.seq}, fp32, AdamW, "
          f"{a.threads} threads, {a.steps} steps (mean of steps 3..{a.steps})")
    print(f"loss at step {a.steps}: trc {lines[-1]['loss']:.4f}  pytorch {torch_result['losses'][-1]:.4f}")
    print(f"{'engine':<8} {'step ms':>9} {'peak RSS MiB':>13}")
    print(f"{'trc':<8} {t_trc:9.1f} {trc_rss / 1024:13.1f}   (trc-run total incl. compile {trc_total:.1f} s)")
    print(f"{'pytorch':<8} {t_torch:9.1f} {torch_rss / 1024:13.1f}")
    print(f"trc speedup: {t_torch / t_trc:.2f}x (goal >= 2x); peak RSS trc/pytorch "
          f"{trc_rss / torch_rss:.2f} (trc's includes compiling the step in-process)")


if __name__ == "__main__":
    main()
