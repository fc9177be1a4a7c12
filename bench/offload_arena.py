#!/usr/bin/env python3
"""GPT-2 124M's training-step arena with activation offloading.

    python3 bench/offload_arena.py [--batches 1,4,8,16] [--horizons 1,4]
                                   [--models DIR] [--trc-opt PATH]

It exports GPT-2 small's shapes once with dynamic axes
(scripts/export_models.py --size gpt2-124m --batch 1 --seq 1024; kept in
--models, default /tmp/offload-arena: a static export at batch 16 runs out
of memory in PyTorch's tracer on an 8 GB share; at batch 4 the dynamic
export's arena equals the static one's to the byte) and, for each batch,
compiles the AdamW training step for CUDA at sequence 1024 with fused
attention, recomputation none and full, without offloading and with it at
each horizon:

    trc-opt gpt2_op17_dyn.onnx --dim batch=B,sequence=1024
        --trc-training-pipeline="loss=none fuse-attention=true recompute=R
        [offload=true horizon=H]"
        --trc-compile="target=cuda entry=train_step weights=init" -o ART

and prints the `memory:` line's device arena, its lower bound and the host
arena (pinned host memory of the offloaded copies), in bytes and GB, with
the device arena's ratio to the same recomputation without offloading.
Only compiles: no GPU is needed.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from recompute_memory import largest_batch, slot_bytes  # noqa: E402


def export(models):
    path = os.path.join(models, "gpt2_op17_dyn.onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "export_models.py"),
                        "--out", models, "--models", "gpt2", "--opsets", "17", "--size",
                        "gpt2-124m", "--batch", "1", "--seq", "1024"],
                       check=True, capture_output=True)
    return path


def compile_step(trc_opt, model, batch, options):
    art = tempfile.mkdtemp(prefix="offload-arena-")
    try:
        done = subprocess.run([trc_opt, model, f"--dim=batch={batch},sequence=1024",
                               "--trc-training-pipeline=" + options,
                               "--trc-compile=target=cuda entry=train_step weights=init",
                               "-o", os.path.join(art, "step")],
                              capture_output=True, text=True)
        slots = slot_bytes(os.path.join(art, "step", "manifest.trc")) \
            if done.returncode == 0 else 0
    finally:
        shutil.rmtree(art, ignore_errors=True)
    if done.returncode != 0:
        sys.exit(f"trc-opt {options}: exit {done.returncode}\n{done.stderr}")
    line = re.search(r"memory: arena (\d+) bytes, lower bound (\d+)[^\n]*", done.stdout + done.stderr)
    host = re.search(r"host arena (\d+) bytes", line.group(0))
    return int(line.group(1)), int(line.group(2)), int(host.group(1)) if host else 0, slots


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", default="1,4,8,16")
    parser.add_argument("--horizons", default="1,4")
    parser.add_argument("--models", default="/tmp/offload-arena")
    parser.add_argument("--trc-opt", default=os.path.join(ROOT, "build", "tools", "trc-opt",
                                                          "trc-opt"))
    args = parser.parse_args()
    gb = lambda b: b / 1e9  # noqa: E731
    print(f"{'batch':>5} {'recompute':>9} {'offload':>10} {'arena (bytes)':>16} {'GB':>6} "
          f"{'ratio':>6} {'lower bound':>16} {'host arena':>16} {'GB':>6}")
    model = export(args.models)
    arenas = {}  # (recompute, offload label) -> [(batch, arena bytes)]
    for batch in (int(b) for b in args.batches.split(",")):
        for recompute in ("none", "full"):
            base = None
            for horizon in [None] + [int(h) for h in args.horizons.split(",")]:
                options = f"loss=none fuse-attention=true recompute={recompute}"
                if horizon is not None:
                    options += f" offload=true horizon={horizon}"
                arena, bound, host, slots = compile_step(args.trc_opt, model, batch, options)
                base = base or arena
                label = "no" if horizon is None else f"horizon {horizon}"
                arenas.setdefault((recompute, label), []).append((batch, arena))
                print(f"{batch:>5} {recompute:>9} {label:>10} {arena:>16,} {gb(arena):>6.2f} "
                      f"{arena / base:>6.3f} {bound:>16,} {host:>16,} {gb(host):>6.2f}",
                      flush=True)
    for device_gb in (40, 80):
        # arena + slots <= 90% of the device, as bench/recompute_memory.py counts it
        fits = ", ".join(f"{r} {label}: {largest_batch(points, slots, device_gb * 1e9)}"
                         for (r, label), points in arenas.items())
        print(f"largest batch in {device_gb} GB: {fits}")


if __name__ == "__main__":
    main()
