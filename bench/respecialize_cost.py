#!/usr/bin/env python3
"""What re-specializing a static export costs: trc-run on a static export of
the bench GPT-2 (traced at batch 8) at batch 4, against the same model
exported with dynamic axes at batch 4, side by side in one run. Both compile
in-process; the static run also imports at the traced sizes and checks the
result with two forward programs (README "Static shapes"). Prints each run's
wall time to the end of its first steps, the ratio, and whether both runs'
losses agree.

    .venv/bin/python bench/respecialize_cost.py [--trc-run build/tools/trc-run/trc-run]
        [--size bench] [--steps 3] [--repeats 3]
"""
import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trc-run", default=common.TRC_RUN)
    p.add_argument("--size", default="bench")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    work = tempfile.mkdtemp(prefix="respecialize-")
    paths = {dynamic: common.export_gpt2(work, a.size, f"gpt2_{'dyn' if dynamic else 'static'}.onnx",
                                         dynamic, init="torch", example_shape=(8, 128))
             for dynamic in (False, True)}
    data = os.path.join(work, "data.txt")
    with open(data, "w") as f:
        f.write("to be or not to be, that is the question. " * 4000)

    def run(model):
        r = common.train(a.trc_run, model, data, work, "m", 4, 128, a.steps)
        return r["wall_s"], [line["loss"] for line in r["lines"]]

    times = {False: [], True: []}
    losses = {}
    for _ in range(a.repeats):
        for dynamic in (True, False):  # alternated: the machine's noise hits both
            seconds, losses[dynamic] = run(paths[dynamic])
            times[dynamic].append(seconds)
    best = {k: min(v) for k, v in times.items()}
    print(f"model: GPT-2 ({a.size}), traced at batch 8 x 128, run at batch 4 x 128, "
          f"{a.steps} steps, best of {a.repeats}")
    print(f"dynamic export:           {best[True]:7.2f} s to the end of step {a.steps}")
    print(f"static, re-specialized:   {best[False]:7.2f} s  "
          f"({best[False] / best[True]:.2f}x the dynamic export's)")
    same = max(abs(x - y) / abs(y) for x, y in zip(losses[False], losses[True]))
    print(f"largest relative loss difference between the two: {same:.1e}")


if __name__ == "__main__":
    main()
