#!/usr/bin/env python3
"""Activation recomputation: what each policy costs and saves.

    .venv/bin/python bench/recompute_memory.py [--build build] [--batches 1,4,8,16]
        [--skip-timing] [--models DIR]

1. GPT-2 124M (GPT-2 small's shapes, sequence 1024, fp32 AdamW, fused
   attention as trc-run uses on CUDA) compiled for the CUDA target at each
   batch under --recompute none, selective, full and auto with a budget
   (halfway between full's arena and none's, through `trc-run
   --save-artifact`, which compiles
   and keeps the step without training): the arena (the memory plan's bytes
   for every temporary: activations and workspace; parameters, gradients
   and AdamW state are the step's slots, counted apart), full/none, and
   the recomputed matrix FLOPs over the step's (test-trc-print-recompute).
   The largest batch fitting 40 and 80 GB: arena + slots <= 90% of the
   device (the rest for the runtime and libraries), the arena taken linear
   in the batch between the measured points.
2. Step time on the CPU: the "bench" GPT-2 (4 layers, width 256, 8 heads,
   vocabulary 256) at batch 8 x 256, trc-run with each policy on the same
   tokens, median ms/step of steps 3-10, runs alternated, ratio to none.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GB = 1e9


def run(cmd, **kw):
    done = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr[-3000:]}")
    return done


def export(size, out, batch=1, seq=16):
    if not os.path.exists(os.path.join(out, "gpt2_op17_dyn.onnx")):
        run([sys.executable, os.path.join(ROOT, "scripts/export_models.py"), "--out", out,
             "--models", "gpt2", "--opsets", "17", "--size", size, "--batch", str(batch),
             "--seq", str(seq)])
    return os.path.join(out, "gpt2_op17_dyn.onnx")


def compile_step(build, model, batch, policy, out):
    """trc-opt: the arena, the slots' bytes and the recompute decisions."""
    pipeline = f"loss=none fuse-attention=true recompute={policy}"
    done = run([os.path.join(build, "tools/trc-opt/trc-opt"), model,
                f"--dim=batch={batch},sequence=1024", f"--trc-training-pipeline={pipeline}",
                "--test-trc-print-recompute",
                "--trc-compile=target=cuda entry=train_step weights=init", "-o", out])
    arena = int(re.search(r"memory: arena (\d+) bytes", done.stderr).group(1))
    flops = re.search(r"matrix FLOPs: step ([0-9.e+]+), recomputed ([0-9.e+]+)", done.stdout)
    step, redone = (float(flops.group(1)), float(flops.group(2))) if flops else (0.0, 0.0)
    slots = slot_bytes(os.path.join(out, "manifest.trc"))
    return arena, slots, step, redone


def slot_bytes(manifest):
    """The bytes of a compiled step's slots (weights, gradients, optimizer
    state, batch inputs), from its manifest's slot records."""
    total = 0
    with open(manifest) as f:
        for line in f:
            # slot I KIND NAME DTYPE RANK DIMS...
            parts = line.split()
            if parts and parts[0] == "slot":
                rank = int(parts[5])
                elements = 1
                for d in parts[6:6 + rank]:
                    elements *= int(d)
                total += elements * {"f32": 4, "bf16": 2, "f16": 2, "i64": 8, "i32": 4}.get(
                    parts[4], 4)
    return total


def compile_auto(build, model, batch, budget, out):
    """trc-run --recompute auto --memory-budget: the arena it settled on."""
    done = run([os.path.join(build, "tools/trc-run/trc-run"), model, "--device", "cuda",
                "--batch-size", str(batch), "--seq-len", "1024", "--attention", "fused",
                "--recompute", "auto", "--memory-budget", str(budget), "--save-artifact", out])
    arena = int(re.findall(r"memory: arena (\d+) bytes", done.stderr)[-1])
    choice = re.search(r"recompute auto: (.*) \(arena", done.stderr)
    return arena, choice.group(1) if choice else "?"


def largest_batch(points, slots, capacity):
    """The largest batch whose arena (linear between/after the measured
    points) plus the slots fit 90% of `capacity`."""
    room = 0.9 * capacity - slots
    (b0, a0), (b1, a1) = points[-2], points[-1]
    per_row = (a1 - a0) / (b1 - b0)
    fixed = a1 - per_row * b1
    return max(0, int((room - fixed) // per_row)) if per_row > 0 else 0


def step_times(build, model, data, policies, rounds=3):
    times = {p: [] for p in policies}
    for _ in range(rounds):
        for policy in policies:
            with tempfile.TemporaryDirectory() as tmp:
                metrics = os.path.join(tmp, "m.jsonl")
                run([os.path.join(build, "tools/trc-run/trc-run"), model, "--device", "cpu",
                     "--data", data, "--batch-size", "8", "--seq-len", "256", "--steps", "10",
                     "--recompute", policy, "--metrics", metrics])
                with open(metrics) as f:
                    ms = [json.loads(line)["step_time_ms"] for line in f if line.strip()]
                times[policy].append(statistics.median(ms[2:]))
    return {p: statistics.median(t) for p, t in times.items()}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--batches", default="1,4,8,16")
    p.add_argument("--models", default=os.path.join(tempfile.gettempdir(), "trc-recompute-bench"))
    p.add_argument("--skip-timing", action="store_true")
    args = p.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    os.makedirs(args.models, exist_ok=True)
    big = export("gpt2-124m", os.path.join(args.models, "124m"))
    policies = ["none", "selective", "full"]
    print("GPT-2 124M, sequence 1024, fp32 AdamW, fused attention, CUDA target")
    print(f"{'batch':>5} {'policy':>10} {'arena GB':>9} {'vs none':>8} {'FLOPs x':>8}")
    points = {p: [] for p in policies}
    slots = 0
    with tempfile.TemporaryDirectory() as tmp:
        for batch in batches:
            none_arena = 0
            for policy in policies:
                arena, slots, step, redone = compile_step(args.build, big, batch, policy,
                                                          os.path.join(tmp, f"{policy}{batch}"))
                none_arena = none_arena or arena
                points[policy].append((batch, arena))
                ratio = (step + redone) / step if step else 1.0
                print(f"{batch:>5} {policy:>10} {arena / GB:>9.3f} {arena / none_arena:>8.3f} "
                      f"{ratio:>8.3f}")
            # Between full's arena and none's: auto must mix the choices.
            full_arena = points["full"][-1][1]
            budget = (none_arena + full_arena) // 2
            arena, choice = compile_auto(args.build, big, batch, budget,
                                         os.path.join(tmp, f"auto{batch}"))
            print(f"{batch:>5} {'auto':>10} {arena / GB:>9.3f} {arena / none_arena:>8.3f} "
                  f"   budget {budget / GB:.3f} GB: {choice}")
    print(f"slots (parameters, gradients, AdamW state, batch I/O): {slots / GB:.3f} GB")
    for capacity in (40, 80):
        fits = {p: largest_batch(points[p], slots, capacity * GB) for p in policies}
        print(f"largest batch in {capacity} GB: " +
              ", ".join(f"{p} {b}" for p, b in fits.items()))
    if args.skip_timing:
        return
    bench = export("bench", os.path.join(args.models, "bench"))
    data = os.path.join(ROOT, "..", "shared", "data", "tinyshakespeare.txt")
    if not os.path.exists(data):
        data = os.path.join(args.models, "data.txt")
        with open(data, "w") as f:
            f.write("to be or not to be, that is the question. " * 4000)
    times = step_times(args.build, bench, data, policies)
    print("CPU step time, bench GPT-2 (4 layers, width 256), batch 8 x 256, fp32 AdamW, "
          "unfused attention")
    for policy in policies:
        print(f"  {policy:>10} {times[policy]:8.1f} ms/step  {times[policy] / times['none']:.3f}x")


if __name__ == "__main__":
    main()
