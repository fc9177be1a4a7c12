#!/usr/bin/env python3
"""Runs an ONNX model in onnxruntime and through trc-run (compiled by trc) on
the same random inputs and compares every output.

    compare_with_onnxruntime.py MODEL.onnx --trc-run PATH [--artifact DIR]
        [--shape NAME=AxB ...] [--rtol 1e-4] [--atol 1e-6] [--seed 0]

Inputs: integer inputs get uniform integers in [0, --high), float inputs
standard normals; --shape fixes the shape of inputs with dynamic axes. With
--artifact, trc-run runs that compiled artifact; otherwise it compiles MODEL
in-process. Prints one line per output and exits 1 on a mismatch.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

NP_TYPES = {1: np.float32, 11: np.float64, 10: np.float16, 7: np.int64, 6: np.int32, 9: np.bool_}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model")
    p.add_argument("--trc-run", required=True)
    p.add_argument("--artifact")
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--high", type=int, default=256)
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-6)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    shapes = {}
    for spec in args.shape:
        name, dims = spec.split("=")
        shapes[name] = [int(d) for d in dims.split("x")]
    model = onnx.load(args.model, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    rng = np.random.default_rng(args.seed)
    feeds = {}
    for inp in model.graph.input:
        if inp.name in initializers:
            continue
        t = inp.type.tensor_type
        shape = shapes.get(inp.name) or [d.dim_value for d in t.shape.dim]
        dtype = NP_TYPES[t.elem_type]
        if np.issubdtype(dtype, np.integer):
            feeds[inp.name] = rng.integers(0, args.high, shape).astype(dtype)
        else:
            feeds[inp.name] = rng.standard_normal(shape).astype(dtype)

    sys.exit(0 if compare(args.model, feeds, args.trc_run, args.rtol, args.atol,
                          args.artifact) else 1)


def compare(model_path, feeds, trc_run, rtol=1e-4, atol=1e-6, artifact=None, by_max=False):
    """Runs `model_path` on `feeds` ({input name: array}) in onnxruntime and
    in trc-run (`artifact`, or the model compiled in-process); prints one
    line per output; returns whether every output matched (shape, and
    |got - want| <= rtol * max(|want|, atol / rtol), or with `by_max`
    rtol * max(largest |want| of the output, atol / rtol)). A failed trc-run
    exits with its error."""
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    expected = dict(zip(names, session.run(None, feeds)))

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [trc_run, artifact or model_path, "--device", "cpu",
               "--output-dir", os.path.join(tmp, "out")]
        for name, value in feeds.items():
            path = os.path.join(tmp, name + ".npy")
            np.save(path, value)
            cmd += ["--input", f"{name}={path}"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"error: trc-run failed: {run.stderr.strip()}")
        ok = True
        for name in names:
            got = np.load(os.path.join(tmp, "out", name + ".npy"))
            want = expected[name]
            scale = np.maximum(np.abs(want).max(initial=0.0) if by_max else np.abs(want),
                               atol / rtol)
            err = float(np.max(np.abs(got.astype(np.float64) - want) / scale)) if want.size else 0.0
            good = got.shape == want.shape and err <= rtol
            ok &= good
            print(f"{name}: {'match' if good else 'MISMATCH'} shape {list(got.shape)} "
                  f"max relative error {err:.2e} (rtol {rtol:g})")
    return ok


if __name__ == "__main__":
    main()
