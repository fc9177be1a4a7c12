"""Checks trc-run --predictions against onnxruntime on the same rows: every
row's logits within 1e-4 (the eval batch's remainder program included) and
the record naming the step and row count.

    python check_predictions.py MODEL.onnx ROWS.npz PREDICTIONS_DIR STEP
"""
import json
import os
import sys

import numpy as np
import onnxruntime as ort

model, rows_path, folder, step = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
rows = dict(np.load(rows_path))
session = ort.InferenceSession(model)
names = [o.name for o in session.get_outputs()]
want = dict(zip(names, session.run(None, rows)))
record = json.load(open(os.path.join(folder, "predictions.json")))
got = {name: np.load(os.path.join(folder, file)) for name, file in record["outputs"].items()}
n = len(rows["labels"])
problems = []
if record["step"] != step or record["rows"] != n:
    problems.append(f"record {record}, expected step {step} and {n} rows")
if sorted(got) != ["logits"]:  # the mean loss has no value per row
    problems.append(f"outputs {sorted(got)}")
elif got["logits"].shape != want["logits"].shape:
    problems.append(f"logits {got['logits'].shape} vs {want['logits'].shape}")
elif not np.allclose(got["logits"], want["logits"], rtol=1e-4, atol=1e-4):
    problems.append(f"logits differ by {np.abs(got['logits'] - want['logits']).max()}")
print("predictions match onnxruntime" if not problems else ("FAIL", problems))
