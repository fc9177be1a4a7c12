#!/usr/bin/env python3
"""Times trc-run evaluating artifacts whose weights dominate: the load
(mapping weights.bin and verifying its checksum) is most of the run.

    .venv/bin/python bench/artifact_load.py --trc-run build/tools/trc-run/trc-run \
        NAME=ARTIFACT_DIR [NAME=ARTIFACT_DIR ...] [--runs 7]

Each artifact is run once to warm the page cache, then `--runs` times; the
median wall time and CPU time (user + system) of each are printed with
their ratios to the first artifact.
Inputs are zeros of each input slot's dtype and shape (read from the
manifest). Compare artifacts of the same model whose manifests differ only
in their checksum (FNV-1a bare hex vs xxh3:) to see the checksum's cost;
the runtime reads both.
"""
import argparse
import os
import resource
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
            times, cpu = [], []
            for _ in range(a.runs):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run(command, check=True, capture_output=True)
                times.append(time.perf_counter() - start)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            results.append((name, statistics.median(times), statistics.median(cpu)))
    # CPU seconds (user + system, all threads) vary less than wall time on a
    # shared machine; both are printed.
    base_wall, base_cpu = results[0][1], results[0][2]
    print(f"{'artifact':<16} {'wall s':>8} {'ratio':>6} {'cpu s':>8} {'ratio':>6}")
    for name, wall, cpu in results:
        print(f"{name:<16} {wall:8.3f} {wall / base_wall:6.2f} {cpu:8.3f} {cpu / base_cpu:6.2f}")


if __name__ == "__main__":
    sys.exit(main())
