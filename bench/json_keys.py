#!/usr/bin/env python3
"""Time of the strict JSON parser on objects with many keys: `trc-run
--config FILE` with N distinct keys and a duplicate of the first one at the
end (the parser must reach the end to report it), for several N. A linear
parser's time doubles when N doubles; the old per-key scan quadrupled.

    python3 bench/json_keys.py [--build build-rt] [--keys 17500,35000,70000]

Prints, per N: the file size, the best of 3 wall times, and the ratio to the
previous N's time (the last N fits --config's 1 MiB limit).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--keys", default="17500,35000,70000")
    args = p.parse_args()
    trc_run = os.path.join(args.build, "tools/trc-run/trc-run")
    tmp = tempfile.mkdtemp(prefix="trc-json-keys-")
    data = os.path.join(tmp, "data.bin")
    with open(data, "wb") as f:
        f.write(bytes(range(256)) * 16)
    previous = None
    print(f"{'keys':>8} {'bytes':>9} {'best s':>8} {'ratio':>6}")
    for n in (int(k) for k in args.keys.split(",")):
        config = os.path.join(tmp, f"config-{n}.json")
        with open(config, "w") as f:
            f.write("{" + ",".join(f'"k{i}":0' for i in range(n)) + ',"k0":1}')
        best = None
        for _ in range(3):
            start = time.perf_counter()
            out = subprocess.run(
                [trc_run, os.path.join(tmp, "absent.onnx"), "--data", data,
                 "--batch-size", "1", "--seq-len", "4", "--steps", "1",
                 "--config", config], capture_output=True, text=True)
            seconds = time.perf_counter() - start
            if 'duplicate key "k0"' not in out.stderr:
                sys.exit(f"unexpected result for {n} keys: {out.stderr.strip()}")
            best = seconds if best is None else min(best, seconds)
        ratio = f"{best / previous:6.2f}" if previous else f"{'':>6}"
        print(f"{n:>8} {os.path.getsize(config):>9} {best:>8.3f} {ratio}")
        previous = best


if __name__ == "__main__":
    main()
