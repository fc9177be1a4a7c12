#!/usr/bin/env python3
"""Reads trc-run --tensorboard's folder with TensorBoard's own reader
(event_accumulator, orphaned data purged as TensorBoard does) and checks it
against the --metrics JSON lines of the same run: the same steps, and each
scalar equal to the line's value (as f32, TensorBoard's simple_value).

    python3 test/Inputs/check_tensorboard.py TB_DIR METRICS.jsonl TAG=KEY...

TAG=KEY pairs name a TensorBoard tag and the JSON key it must match, e.g.
train/loss=loss eval/loss=eval_loss. Prints one line per tag.
"""
import json
import sys

import numpy as np
from tensorboard.backend.event_processing import event_accumulator


def main():
    folder, metrics_path, pairs = sys.argv[1], sys.argv[2], sys.argv[3:]
    acc = event_accumulator.EventAccumulator(folder, size_guidance={"scalars": 0})
    acc.Reload()
    lines = [json.loads(line) for line in open(metrics_path)]
    failed = False
    for pair in pairs:
        tag, key = pair.split("=")
        want = {l["step"]: l[key] for l in lines if l.get(key) is not None}
        events = acc.Scalars(tag)
        got = {e.step: e.value for e in events}
        # Each step once: a resumed run's orphans (steps a killed run wrote
        # past its checkpoint) are purged, not shown twice.
        same = len(events) == len(got) and sorted(got) == sorted(want) and all(
            np.float32(got[s]) == np.float32(want[s]) for s in want)
        print("%s: %d steps %s" % (tag, len(events), "match" if same else "DIFFER"))
        if not same:
            print("  tensorboard:", sorted(got.items()))
            print("  metrics:    ", sorted(want.items()))
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
