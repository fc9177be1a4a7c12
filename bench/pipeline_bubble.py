#!/usr/bin/env python3
"""Pipeline bubbles and activation memory measured on CPU ranks against
each schedule's formula.

    python3 bench/pipeline_bubble.py [--size bench|small] [--batch 16] [--seq 64]
                                     [--steps 6] [--trc-run PATH]

It exports a GPT-2-style model (scripts/export_models.py; "bench": 4 layers,
hidden 256), trains it under `mpirun -np 2` with pipeline_parallel_degree 2
and each schedule (GPipe, 1F1B; interleaved 1F1B with 2 chunks per rank) at
2, 4 and 8 microbatches (and ZB-H1, its weight gradients deferred) with
`--profile`, and reads the timeline trc-run
writes:

  * bubble, per rank and step (the first two steps, warm-up, dropped): the
    window from the rank's first forward/backward to its last, minus the
    time its forwards and backwards ran, over that time (idle / busy, the
    research notes' definition: (p-1)/m for GPipe and 1F1B, (p-1)/(v m)
    interleaved, about (p-1)/(3m) ZB-H1, for equal stages);
  * peak stashed activations per rank (trc-run prints them), in units of one
    microbatch's stash (GPipe's peak / m), against the schedule's in-flight
    count (GPipe m, 1F1B p - r, ZB-H1 min(p, m)); B's values kept for W add
    a fraction of a microbatch.

The stages are not equal (the last holds the LM head and the loss), so the
measured bubble is the formula's plus the imbalance; the stage times are
printed so the difference can be read. Timings on shared machines are noisy;
the bubble is a ratio within one run.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def export(size, out):
    python = os.path.join(ROOT, ".venv", "bin", "python")
    subprocess.run([python, os.path.join(ROOT, "scripts", "export_models.py"), "--out", out,
                    "--models", "gpt2", "--opsets", "17", "--size", size],
                   check=True, capture_output=True)
    return os.path.join(out, "gpt2_op17_dyn.onnx")


def run(trc_run, model, data, args, config, trace):
    command = ["mpirun", "--oversubscribe", "-np", "2", trc_run, model, "--data", data,
               "--batch-size", str(args.batch), "--seq-len", str(args.seq),
               "--steps", str(args.steps), "--profile", trace,
               "--profile-steps", str(args.steps - 2), "--config", json.dumps(config)]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"trc-run failed ({config}):\n{done.stderr}")
    peaks = {int(r): int(b) for r, b in
             re.findall(r"pipeline rank (\d+): peak stashed activations (\d+) bytes", done.stderr)}
    return peaks


def bubbles(trace):
    """Per rank: mean over steps of (window - busy) / busy, and mean busy ms.
    An action's span includes its wait for the values it receives (a nested
    p2p span): that wait is bubble, not work."""
    with open(trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    out = {}
    for rank in sorted({e["pid"] for e in events}):
        mine = [e for e in events if e["pid"] == rank]
        steps = [e for e in mine if e.get("cat") == "step"]
        actions = [e for e in mine
                   if e.get("cat") == "compute" and re.match(r"[FBW] stage", e["name"])]
        waits = [e for e in mine if e.get("cat") == "p2p"]
        ratios, busy_ms = [], []

        def within(inner, outer):
            return (inner["ts"] >= outer["ts"]
                    and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"])

        for step in steps:
            inside = [a for a in actions if within(a, step)]
            if not inside:
                continue
            window = max(a["ts"] + a["dur"] for a in inside) - min(a["ts"] for a in inside)
            waited = sum(w["dur"] for w in waits if any(within(w, a) for a in inside))
            busy = sum(a["dur"] for a in inside) - waited
            ratios.append((window - busy) / busy)
            busy_ms.append(busy / 1000.0)
        out[rank] = (sum(ratios) / len(ratios), sum(busy_ms) / len(busy_ms))
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", choices=["bench", "small"], default="bench")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--trc-run", default=os.path.join(ROOT, "build", "tools", "trc-run",
                                                          "trc-run"))
    args = parser.parse_args()
    p = 2
    with tempfile.TemporaryDirectory() as work:
        model = export(args.size, work)
        data = os.path.join(os.path.dirname(ROOT), "shared", "data", "tinyshakespeare.txt")
        print(f"GPT-2 {args.size}, batch {args.batch} x {args.seq}, p = {p} CPU ranks, "
              f"steps 3-{args.steps}")
        print(f"{'schedule':<18}{'m':>3}{'formula':>9}{'rank 0':>8}{'rank 1':>8}"
              f"{'busy ms r0/r1':>16}{'stash MB r0/r1':>17}{'in flight r0/r1':>17}"
              f"{'formula':>9}")
        per_microbatch = {}
        for schedule, chunks in (("gpipe", 1), ("1f1b", 1), ("zb_h1", 1),
                                 ("interleaved_1f1b", 2)):
            for m in (2, 4, 8):
                config = {"pipeline_parallel_degree": p, "microbatches": m,
                          "pipeline_schedule": schedule}
                if chunks > 1:
                    config["virtual_stages"] = chunks
                trace = os.path.join(work, f"{schedule}-{m}.json")
                peaks = run(args.trc_run, model, data, args, config, trace)
                measured = bubbles(trace)
                formula = (p - 1) / (chunks * m) if schedule != "zb_h1" else (p - 1) / (3 * m)
                if schedule == "gpipe":
                    per_microbatch[m] = {r: b / m for r, b in peaks.items()}
                # Microbatches in flight: the peak over one microbatch's stash
                # (GPipe's peak / m); B's values kept for W add a fraction.
                in_flight = [peaks[r] / per_microbatch[m][r] for r in (0, 1)]
                expected = {"gpipe": f"{m}/{m}", "1f1b": f"{min(p, m)}/{min(p - 1, m)}",
                            "zb_h1": f"{min(p, m)}/{min(p, m)}"}.get(schedule, "-")
                print(f"{schedule:<18}{m:>3}{formula:>9.3f}{measured[0][0]:>8.3f}"
                      f"{measured[1][0]:>8.3f}{measured[0][1]:>9.1f}/{measured[1][1]:<6.1f}"
                      f"{peaks[0] / 2**20:>10.1f}/{peaks[1] / 2**20:<6.1f}"
                      f"{in_flight[0]:>10.2f}/{in_flight[1]:<6.2f}{expected:>9}")


if __name__ == "__main__":
    main()
