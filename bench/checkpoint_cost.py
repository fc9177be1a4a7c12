#!/usr/bin/env python3
"""What checkpointing every step costs: trc-run on the bench GPT-2 without
checkpoints, with `--checkpoint-every 1` (written in the background while
training goes on, the default) and with `--checkpoint-every 1
--checkpoint-sync` (each waited for), side by side in one run, alternated
over repeats. The time per step is wall clock between the metrics lines of
the second half of the run (the lines' `time`), so a checkpoint's cost is
in it wherever it falls. Prints each, the ratios to no checkpoints, the
checkpoint's size, and whether the losses agree (they must: checkpoints
change nothing).

    .venv/bin/python bench/checkpoint_cost.py [--trc-run build/tools/trc-run/trc-run]
        [--size bench] [--steps 40] [--batch 8] [--seq 128] [--repeats 3]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def seconds_per_step(lines):
    later = lines[len(lines) // 2:]
    return (later[-1]["time"] - later[0]["time"]) / (len(later) - 1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trc-run", default=common.TRC_RUN)
    p.add_argument("--size", default="bench")
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="checkpoint-cost-")
    model = common.export_gpt2(work, a.size)
    data = common.text_data(work)
    ckpt = os.path.join(work, "ck")
    kinds = {"none": [],
             "background": ["--checkpoint-dir", ckpt, "--checkpoint-every", "1",
                            "--overwrite-checkpoints", "--keep-last", "2"],
             "sync": ["--checkpoint-dir", ckpt, "--checkpoint-every", "1",
                      "--overwrite-checkpoints", "--keep-last", "2", "--checkpoint-sync"]}
    times = {k: [] for k in kinds}
    losses = {}
    for _ in range(a.repeats):
        for kind, extra in kinds.items():
            shutil.rmtree(ckpt, ignore_errors=True)
            run = common.train(a.trc_run, model, data, work, kind, a.batch, a.seq, a.steps, extra)
            times[kind].append(seconds_per_step(run["lines"]))
            losses[kind] = [l["loss"] for l in run["lines"]]
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(ckpt) for f in fs)
    best = {k: statistics.median(v) for k, v in times.items()}
    print(f"model: GPT-2 '{a.size}', batch {a.batch} x {a.seq}, {a.steps} steps (CPU), "
          f"median of {a.repeats}; checkpoints kept: 2, {size / 2**20:.1f} MiB on disk")
    for kind in kinds:
        print(f"  {kind:11s} {best[kind] * 1000:8.1f} ms per step   "
              f"({best[kind] / best['none']:.3f}x no checkpoints)")
    same = losses["none"] == losses["background"] == losses["sync"]
    print("losses bit-identical" if same else "LOSSES DIFFER")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
