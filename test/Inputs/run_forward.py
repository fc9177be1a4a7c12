"""One evaluation of an ONNX model through trc-run, for the op checkers
(check_pad.py, check_opset23.py): saves the inputs as .npy, runs
`trc-run MODEL --device cpu --input NAME=FILE ... --output-dir`, and returns
an output as numpy; a failed run exits naming the case."""
import os
import subprocess
import sys

import numpy as np
import onnx


def forward(trc_run, model, inputs, workdir, name, output="y"):
    path = os.path.join(workdir, name + ".onnx")
    onnx.save(model, path)
    flags = []
    for key, value in inputs.items():
        npy = os.path.join(workdir, f"{name}.{key}.npy")
        np.save(npy, value)
        flags += ["--input", f"{key}={npy}"]
    out = os.path.join(workdir, name + ".out")
    run = subprocess.run([trc_run, path, "--device", "cpu", *flags, "--output-dir", out],
                         capture_output=True, text=True)
    if run.returncode:
        sys.exit(f"error: {name}: trc-run failed: {run.stderr.strip()}")
    return np.load(os.path.join(out, output + ".npy"))
