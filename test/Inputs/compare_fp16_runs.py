"""Compares two --metrics files of fp16 runs step by step (test/Training/pipeline-fp16.test):
the losses within TOLERANCE (default 1e-5) relative, the loss scales and the
skipped steps equal; at least one step skipped and one applied.

  compare_fp16_runs.py REFERENCE RUN NAME [TOLERANCE]"""
import json
import sys

reference, run, name = sys.argv[1:4]
tolerance_text = sys.argv[4] if len(sys.argv) > 4 else "1e-5"
tolerance = float(tolerance_text)
a = [json.loads(line) for line in open(reference) if line.strip()]
b = [json.loads(line) for line in open(run) if line.strip()]
if [m["step"] for m in a] != [m["step"] for m in b]:
    sys.exit(f"{name}: steps {[m['step'] for m in b]} against {[m['step'] for m in a]}")
worst = max(abs(x["loss"] - y["loss"]) / abs(x["loss"]) for x, y in zip(a, b))
scales = [(m["loss_scale"], m["skipped"]) for m in a]
if worst > tolerance or scales != [(m["loss_scale"], m["skipped"]) for m in b]:
    sys.exit(f"{name}: largest relative loss difference {worst:.2e}; scales/skips "
             f"{[(m['loss_scale'], m['skipped']) for m in b]} against {scales}")
skipped = sum(m["skipped"] for m in a)
if not 0 < skipped < len(a):
    sys.exit(f"{name}: {skipped} of {len(a)} steps skipped: the check needs both kinds")
print(f"{name}: {len(a)} steps, {skipped} skipped, losses within {tolerance_text}, "
      "loss scales and skipped steps equal")
