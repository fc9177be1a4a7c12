#!/usr/bin/env python3
"""Forward latency on the CPU, side by side in one run: trc against
onnxruntime and PyTorch (Debian's python3-torch) on the same exported
GPT-2-style model, same inputs, same thread count; prints times and ratios.

    .venv/bin/python bench/forward_cpu.py [--batch 8] [--seq 256] [--threads 2]
        [--runs 20] [--size bench] [--build build]

The model is scripts/export_models.py's GPT-2 (loss inside) at --size (bench:
4 layers, width 256, 8 heads, context 256, byte vocabulary), exported static
at batch x seq. trc compiles it with `trc-opt --trc-compile` and times it with
`trc-run --repeat` (the step only, not process start). Every engine uses the
same OpenBLAS with --threads threads. Also prints the memory plan line.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return sum(times) / len(times), min(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--size", default="bench")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    args = p.parse_args()
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    import numpy as np
    import onnxruntime as ort
    import torch
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import export_models as em

    torch.set_num_threads(args.threads)
    em.configure(args.size)
    em.EXAMPLE_SHAPE[:] = [args.batch, args.seq]
    tmp = tempfile.mkdtemp(prefix="trc-bench-")
    model_path = os.path.join(tmp, "gpt2.onnx")
    model = em.build("gpt2")
    em.export(model, model_path, 17, dynamic=False)
    ids, targets = em.example_inputs()
    feeds = {"input_ids": ids.numpy(), "targets": targets.numpy()}
    for name, value in feeds.items():
        np.save(os.path.join(tmp, name + ".npy"), value)

    # trc: compile (timed), then the step through trc-run --repeat.
    start = time.perf_counter()
    compile_out = subprocess.run(
        [os.path.join(args.build, "tools/trc-opt/trc-opt"), model_path,
         "--trc-compile=target=cpu", "-o", os.path.join(tmp, "artifact")],
        capture_output=True, text=True, check=True)
    compile_s = time.perf_counter() - start
    run = subprocess.run(
        [os.path.join(args.build, "tools/trc-run/trc-run"), os.path.join(tmp, "artifact"),
         "--device", "cpu", "--output-dir", os.path.join(tmp, "out"),
         "--repeat", str(args.runs)]
        + [f"--input={n}={os.path.join(tmp, n + '.npy')}" for n in feeds],
        capture_output=True, text=True, check=True)
    m = re.search(r"mean ([0-9.]+) ms, best ([0-9.]+) ms", run.stderr)
    trc_mean, trc_best = float(m.group(1)), float(m.group(2))
    trc_loss = float(np.load(os.path.join(tmp, "out", "loss.npy")))

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
    ort_loss = float(session.run(None, feeds)[0])
    ort_mean, ort_best = timed(lambda: session.run(None, feeds), args.runs)

    model.eval()
    with torch.no_grad():
        torch_loss = float(model(ids, targets))
        torch_mean, torch_best = timed(lambda: model(ids, targets), args.runs)

    params = sum(p.numel() for p in model.parameters())
    print(f"model: GPT-2-style ({args.size}: {params/1e6:.2f}M parameters), batch {args.batch}, "
          f"sequence {args.seq}, fp32, {args.threads} threads, {args.runs} runs")
    print(f"losses: trc {trc_loss:.6f}  onnxruntime {ort_loss:.6f}  pytorch {torch_loss:.6f}")
    print(f"trc compile time: {compile_s:.2f} s; {compile_out.stderr.strip()}")
    print(f"{'engine':<12} {'mean ms':>9} {'best ms':>9} {'trc speedup (mean)':>20}")
    for name, mean, best in (("trc", trc_mean, trc_best), ("onnxruntime", ort_mean, ort_best),
                             ("pytorch", torch_mean, torch_best)):
        print(f"{name:<12} {mean:9.2f} {best:9.2f} {mean / trc_mean:20.2f}x")


if __name__ == "__main__":
    main()
