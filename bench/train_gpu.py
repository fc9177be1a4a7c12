#!/usr/bin/env python3
"""GPT-2 training on one GPU: trc against PyTorch eager and torch.compile,
side by side in one run (issue 5's measurement).

Two halves, because GPU nodes have no compiler:

  prepare  (build machine, full build): exports GPT-2 (--size, default GPT-2
           small: 124M parameters, sequence 1024) and saves trc's bf16 AdamW
           training step for each --batch with `trc-run ... --device cuda
           --save-artifact` (weights=init: each step is a few MiB).
      python3 bench/train_gpu.py prepare --out bench-gpu [--batch 4 8 16] [--size gpt2-124m]

  run      (GPU machine, runtime-only trc-run of the GPU bundle, scripts/gpu-bundle.sh): trains
           each saved step with trc-run, and the same architecture with
           PyTorch (bf16 autocast, fused AdamW) eager and torch.compile, on
           the same token stream; then doubles PyTorch's batch until it runs
           out of memory.
      python3 bench/train_gpu.py run --steps-dir bench-gpu \\
          --trc-run build-gpu/tools/trc-run/trc-run [--steps 30] [--data FILE]

Measured per engine and batch: tokens/s (median over the steps after the
first --warmup), MFU (model FLOPs per token 6N + 12 L T d, over the GPU's
dense bf16 peak: H100/H200 989 TFLOP/s, or --peak-tflops), and peak GPU
memory, sampled for the engine's own process with nvidia-smi every 50 ms
(the same method for all engines; PyTorch's max_memory_reserved is printed
too). Ratios: trc / torch.compile tokens/s (goal >= 1.25), trc / eager peak
memory (goal <= 0.7), MFU (goal >= 50%). `--device cpu` runs the same
script on the CPU with tiny sizes (a smoke test of the script, no GPU
numbers). Anything missing ends it with "train_gpu.py: error: ...".
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DENSE_BF16_TFLOPS = {"H100": 989.4, "H200": 989.4, "A100": 312.0}

TORCH_CHILD = r"""
import json, os, sys, time
import numpy as np, torch
sys.path.insert(0, os.path.join(sys.argv[1], "scripts"))
import export_models as em
size, batch, seq, steps, data, mode, device = sys.argv[2:9]
precision = sys.argv[9] if len(sys.argv) > 9 else ("bf16" if device == "cuda" else "fp32")
batch, seq, steps = int(batch), int(seq), int(steps)
em.configure(size)
model = em.build("gpt2").to(device)
cuda = device == "cuda"
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=cuda) if cuda else \
    torch.optim.AdamW(model.parameters(), lr=1e-4)
step_fn = model
if mode == "compile":
    step_fn = torch.compile(model)
tokens = np.frombuffer(open(data, "rb").read(), dtype=np.uint8).astype(np.int64)
pos, bt, times, losses = 0, batch * seq, [], []
for _ in range(steps):
    if pos + bt + 1 > len(tokens): pos = 0
    w = torch.tensor(tokens[pos:pos + bt + 1]); pos += bt
    x, y = w[:-1].view(batch, seq).to(device), w[1:].view(batch, seq).to(device)
    if cuda: torch.cuda.synchronize()
    start = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=precision == "bf16"):
        loss = step_fn(x, y)
    loss.backward(); opt.step()
    if cuda: torch.cuda.synchronize()
    times.append((time.perf_counter() - start) * 1e3); losses.append(float(loss))
reserved = torch.cuda.max_memory_reserved() if cuda else 0
print(json.dumps({"times": times, "losses": losses, "reserved": reserved}))
"""


def die(message):
    sys.exit(f"train_gpu.py: error: {message}")


class GpuMemorySampler:
    """Peak memory nvidia-smi reports for one process, sampled every 50 ms."""

    def __init__(self, pid):
        self.pid, self.peak, self.stop = pid, 0, threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.stop.is_set():
            try:
                out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                                      "--format=csv,noheader,nounits"],
                                     capture_output=True, text=True, timeout=5).stdout
                for line in out.splitlines():
                    pid, used = [f.strip() for f in line.split(",")]
                    if int(pid) == self.pid:
                        self.peak = max(self.peak, int(used) * 2**20)
            except (OSError, ValueError, subprocess.SubprocessError):
                pass
            self.stop.wait(0.05)

    def finish(self):
        self.stop.set()
        self.thread.join()
        return self.peak


def run_engine(cmd, gpu):
    """Runs `cmd`; (returncode, stdout, stderr tail, peak GPU memory or None)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(cmd, stdout=out, stderr=err)
        sampler = GpuMemorySampler(child.pid) if gpu else None
        child.wait()
        peak = sampler.finish() if sampler else None
        out.seek(0)
        err.seek(0)
        return child.returncode, out.read(), err.read()[-2000:], peak


def model_flops_per_token(size, seq, root=ROOT):
    """Training FLOPs per token (6N + 12 L T d) and N, from export_models' GPT-2
    under `root` (this checkout, or a GPU bundle)."""
    sys.path.insert(0, os.path.join(root, "scripts"))
    import export_models as em
    em.configure(size)
    n = sum(p.numel() for p in em.build("gpt2").parameters())
    return 6 * n + 12 * em.LAYERS * seq * em.WIDTH, n


def prepare(a):
    trc_run = a.trc_run or os.path.join(ROOT, "build/tools/trc-run/trc-run")
    if not os.access(trc_run, os.X_OK):
        die(f"no trc-run at {trc_run} (build first: bash scripts/build.sh)")
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import export_models as em
    em.configure(a.size)
    os.makedirs(a.out, exist_ok=True)
    model = os.path.join(a.out, "gpt2.onnx")
    if not os.path.exists(model):
        em.export(em.build("gpt2"), model, 17, dynamic=True)
    seq = a.seq or em.CONTEXT
    device = "cpu" if a.device == "cpu" else "cuda"
    precision = "fp32" if device == "cpu" else "bf16"
    for batch in a.batch:
        out = os.path.join(a.out, f"step-b{batch}")
        cmd = [trc_run, model, "--batch-size", str(batch), "--seq-len", str(seq),
               "--precision", precision, "--init-weights", "--lr", "1e-4",
               "--device", device, "--save-artifact", out]
        start = time.perf_counter()
        if subprocess.run(cmd).returncode != 0:
            die(f"saving the step for batch {batch} failed: {' '.join(cmd)}")
        print(f"saved {out} ({time.perf_counter() - start:.1f} s)")
    with open(os.path.join(a.out, "bench.json"), "w") as f:
        json.dump({"size": a.size, "seq": seq, "batches": a.batch, "device": device,
                   "precision": precision}, f)
    os.remove(model)  # the steps carry their own initializers; keep the folder small


def median_after(xs, warmup):
    return statistics.median(xs[warmup:] if len(xs) > warmup else xs)


def run(a):
    info_path = os.path.join(a.steps_dir, "bench.json")
    if not os.path.exists(info_path):
        die(f"{info_path} is missing (make the folder with: train_gpu.py prepare)")
    info = json.load(open(info_path))
    gpu = a.device != "cpu"
    if gpu and info["device"] != "cuda":
        die(f"{a.steps_dir} holds {info['device']} steps; run with --device cpu")
    if not os.access(a.trc_run, os.X_OK):
        die(f"no trc-run at {a.trc_run} (the GPU bundle, scripts/gpu-bundle.sh, carries one)")
    name, peak_tflops = "cpu", a.peak_tflops
    if gpu:
        try:
            name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                  capture_output=True, text=True, check=True).stdout.splitlines()[0]
        except (OSError, subprocess.CalledProcessError, IndexError):
            die("nvidia-smi found no GPU")
        if not peak_tflops:
            peak_tflops = next((v for k, v in DENSE_BF16_TFLOPS.items() if k in name), None)
            if not peak_tflops:
                die(f"unknown GPU '{name}': pass --peak-tflops (dense bf16)")
    size, seq = info["size"], info["seq"]
    flops, params = model_flops_per_token(size, seq)
    data = a.data or os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")
    if not os.path.exists(data):
        die(f"no data file {data} (pass --data)")
    device = "cuda" if gpu else "cpu"

    rows = []

    def record(engine, batch, times, peak, note=""):
        tokens = batch * seq / (median_after(times, a.warmup) / 1e3)
        mfu = tokens * flops / (peak_tflops * 1e12) if peak_tflops else None
        rows.append(dict(engine=engine, batch=batch, tokens=tokens, mfu=mfu, peak=peak,
                         note=note))

    for batch in info["batches"]:
        step = os.path.join(a.steps_dir, f"step-b{batch}")
        with tempfile.TemporaryDirectory() as tmp:
            metrics = os.path.join(tmp, "m.jsonl")
            rc, _, err, peak = run_engine(
                [a.trc_run, step, "--device", device, "--data", data, "--batch-size", str(batch),
                 "--seq-len", str(seq), "--steps", str(a.steps), "--lr", "1e-4",
                 "--metrics", metrics], gpu)
            if rc != 0:
                rows.append(dict(engine="trc", batch=batch, tokens=None, mfu=None, peak=peak,
                                 note="failed: " + err.strip().splitlines()[-1][:80]))
            else:
                lines = [json.loads(l) for l in open(metrics)]
                record("trc", batch, [l["step_time_ms"] for l in lines], peak,
                       f"loss {lines[-1]['loss']:.3f}")
        for mode in ("eager", "compile"):
            rc, out, err, peak = run_engine(
                [sys.executable, "-c", TORCH_CHILD, ROOT, size, str(batch), str(seq),
                 str(a.steps), data, mode, device], gpu)
            if rc != 0:
                rows.append(dict(engine=f"torch {mode}", batch=batch, tokens=None, mfu=None,
                                 peak=peak, note="failed: " + err.strip().splitlines()[-1][:80]))
                continue
            r = json.loads(out)
            record(f"torch {mode}", batch, r["times"], peak,
                   f"loss {r['losses'][-1]:.3f}, reserved {r['reserved'] / 2**30:.2f} GiB")

    # PyTorch's largest batch: doubled from the largest measured until it fails.
    largest = {}
    if gpu:
        for mode in ("eager", "compile"):
            batch, ok = max(info["batches"]), None
            while batch <= a.max_batch:
                rc, _, _, _ = run_engine([sys.executable, "-c", TORCH_CHILD, ROOT, size,
                                          str(batch), str(seq), "2", data, mode, device], False)
                if rc != 0:
                    break
                ok, batch = batch, batch * 2
            largest[f"torch {mode}"] = ok
        fits = [r["batch"] for r in rows if r["engine"] == "trc" and r["tokens"]]
        largest["trc"] = max(fits) if fits else None

    print(f"GPT-2 ({size}: {params / 1e6:.1f}M parameters), sequence {seq}, "
          f"{info['precision']}, AdamW, {a.steps} steps (median after {a.warmup}); {name}"
          + (f", dense bf16 peak {peak_tflops} TFLOP/s" if peak_tflops else ""))
    print(f"{'engine':<14} {'batch':>5} {'tokens/s':>11} {'MFU':>6} {'peak GiB':>9}  note")
    for r in rows:
        tok = f"{r['tokens']:11.0f}" if r["tokens"] else f"{'-':>11}"
        mfu = f"{100 * r['mfu']:5.1f}%" if r["mfu"] else f"{'-':>6}"
        peak = f"{r['peak'] / 2**30:9.2f}" if r["peak"] else f"{'-':>9}"
        print(f"{r['engine']:<14} {r['batch']:>5} {tok} {mfu} {peak}  {r['note']}")
    for batch in info["batches"]:
        by = {r["engine"]: r for r in rows if r["batch"] == batch}
        trc, eager, comp = by.get("trc"), by.get("torch eager"), by.get("torch compile")
        parts = []
        if trc and comp and trc["tokens"] and comp["tokens"]:
            parts.append(f"tokens/s trc/torch.compile {trc['tokens'] / comp['tokens']:.2f} "
                         "(goal >= 1.25)")
        if trc and eager and trc["tokens"] and eager["tokens"]:
            parts.append(f"trc/eager {trc['tokens'] / eager['tokens']:.2f}")
        if trc and eager and trc["peak"] and eager["peak"]:
            parts.append(f"peak memory trc/eager {trc['peak'] / eager['peak']:.2f} (goal <= 0.7)")
        if parts:
            print(f"batch {batch}: " + "; ".join(parts))
    if largest:
        print("largest batch: " + ", ".join(f"{k} {v}" for k, v in largest.items())
              + f" (trc: of the saved steps {info['batches']}; PyTorch: doubled up to "
              f"{a.max_batch})")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--out", required=True)
    pp.add_argument("--batch", type=int, nargs="+", default=[4, 8, 16])
    pp.add_argument("--size", default="gpt2-124m")
    pp.add_argument("--seq", type=int, default=0, help="default: the model's context")
    pp.add_argument("--trc-run", default="")
    pp.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    pr = sub.add_parser("run")
    pr.add_argument("--steps-dir", required=True)
    pr.add_argument("--trc-run", required=True)
    pr.add_argument("--data", default="")
    pr.add_argument("--steps", type=int, default=30)
    pr.add_argument("--warmup", type=int, default=5)
    pr.add_argument("--max-batch", type=int, default=256)
    pr.add_argument("--peak-tflops", type=float, default=0.0)
    pr.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    a = p.parse_args()
    prepare(a) if a.command == "prepare" else run(a)


if __name__ == "__main__":
    main()
