#!/usr/bin/env python3
"""Times trc-run evaluating artifacts whose weights dominate: the load
(mapping weights.bin and verifying its checksum) is most of the run.

    .venv/bin/python bench/artifact_load.py --trc-run build/tools/trc-run/trc-run \
        NAME=ARTIFACT_DIR [NAME=ARTIFACT_DIR ...] [--runs 7]

Each artifact is run once to warm the page cache, then `--runs` times; the
median wall time of each is printed with its ratio to the first artifact.
Inputs are zeros of each input slot's dtype and shape (read from the
manifest). Compare artifacts of the same model whose manifests differ only
in their checksum (FNV-1a bare hex vs xxh3:) to see the checksum's cost;
the runtime reads both.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

import numpy as np

DTYPES = {"f32": np.float32, "f64": np.float64, "i64": np.int64, "i32": np.int32}


def inputs_of(artifact):
    """(name, dtype, shape) of each input slot of a manifest.trc."""
    out = []
    with open(os.path.join(artifact, "manifest.trc")) as f:
        for line in f:
            fields = line.split()
            # slot INDEX input NAME DTYPE RANK DIM...
            if len(fields) >= 6 and fields[0] == "slot" and fields[2] == "input":
                rank = int(fields[5])
                shape = [int(d) for d in fields[6:6 + rank]]
                out.append((urllib.parse.unquote(fields[3]), DTYPES[fields[4]], shape))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trc-run", required=True)
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("artifacts", nargs="+", metavar="NAME=DIR")
    a = p.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for spec in a.artifacts:
            name, _, artifact = spec.partition("=")
            command = [a.trc_run, artifact, "--output-dir", os.path.join(tmp, "out"), "--device", "cpu"]
            for i, (input_name, dtype, shape) in enumerate(inputs_of(artifact)):
                path = os.path.join(tmp, f"{name}-{i}.npy")
                np.save(path, np.zeros(shape, dtype=dtype))
                command += ["--input", f"{input_name}={path}"]
            subprocess.run(command, check=True, capture_output=True)  # warm the page cache
            times = []
            for _ in range(a.runs):
                start = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True)
                times.append(time.perf_counter() - start)
            results.append((name, statistics.median(times), min(times)))
    base = results[0][1]
    print(f"{'artifact':<16} {'median s':>9} {'best s':>8} {'ratio':>6}")
    for name, median, best in results:
        print(f"{name:<16} {median:9.3f} {best:8.3f} {median / base:6.2f}")


if __name__ == "__main__":
    sys.exit(main())
