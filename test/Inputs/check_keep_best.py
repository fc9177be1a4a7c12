#!/usr/bin/env python3
"""keep-best.test's check: D/best names the checkpointed step with the lowest
eval_loss in the metrics, that step is not the latest, and D holds exactly
the best and the latest step folders (--keep-last 1)."""
import json
import os
import sys

work = sys.argv[1]
lines = [json.loads(l) for l in open(os.path.join(work, "m.jsonl"))]
losses = {l["step"]: l["eval_loss"] for l in lines}
best_step = min(losses, key=lambda s: losses[s])
name, metric, value = open(os.path.join(work, "ck", "best")).read().split()
if name != f"step-{best_step}" or metric != "eval_loss" or float(value) != losses[best_step]:
    print(f"FAIL: best is {name} {metric} {value}; the metrics say step-{best_step} {losses[best_step]}")
latest = open(os.path.join(work, "ck", "latest")).read().strip()
print(f"best is the lowest eval_loss: {name}, " +
      ("not the latest" if name != latest else "FAIL: it is the latest") + f" ({latest})")
folders = sorted(f for f in os.listdir(os.path.join(work, "ck")) if f.startswith("step-"))
expected = sorted({name, latest})
print("folders: the best and the latest" if folders == expected else f"FAIL: folders {folders}")
