#!/usr/bin/env python3
"""Predicted against measured step time of parallel plans on CPU ranks.

    python3 bench/plan_accuracy.py --profile PROFILE.json [--plans all|NAME,...]
                                   [--model MODEL.onnx] [--steps 8] [--batch 16] [--seq 64]
                                   [--trc-run PATH] [--trc-plan PATH] [--json OUT]
                                   [--measured ROWS.json] [--data ROWS.npz]

PROFILE.json is this machine's device profile (trc-run --calibrate at 1, 2
and 4 ranks; `--calibrate` below makes it first). For each plan of the
bench GPT-2 (scripts/export_models.py --size bench: 4 layers, hidden 256,
8 heads, vocabulary 256; global batch 16 x 64, AdamW, fp32), or of
--model (an .onnx with dynamic axes 'batch' and 'sequence', e.g.
bench/export_hf_llama.py's Hugging Face Llama of the same size; or with
--data ROWS.npz a model whose rows are not tokens, e.g. export_hf.py's
ResNet-18 with its pixels and labels: only 'batch' is sized), it

  * trains it with `mpirun -np R trc-run MODEL.onnx --config PLAN` for
    --steps steps and takes the median step time of the steps after the
    first two (warm-up: page faults, the first collectives), from the
    metrics JSONL (rank 0's step_time_ms: a step ends when its update is
    applied on every rank it waits for);
  * asks `trc-plan --model MODEL.onnx --cluster cpu:R --device-profile
    PROFILE.json --plan PLAN --json` for the predicted step time (the
    whole plan is given: nothing is searched);

then prints one row per plan with the error, the mean absolute error, and
how well the predictions order the plans: Spearman's rank correlation and
the share of plan pairs the predictions order as the measurements do (over
all plans, and within each rank count, where the search chooses).

The constants come from the profile alone (calibration), the work from
the model's own compiled training step (trc-plan compiles it for each
plan's tensor layout, recomputation and microbatch:
trc/Driver/CompiledModelWork.h); nothing here is fitted to these runs. Timings need a quiet machine: run it under the build lock. Other
processes may still run (tests, other users): each run is checked against
/proc/stat, and a run during which processes other than its own used more
than 5% of the machine is repeated once the machine is quiet again (up to
--tries times; the row says how many runs it took).
"""
import argparse
import json
import time
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def plan(tensor=1, pipeline=1, microbatches=1, schedule="1f1b", virtual=1, zero=0, sp=False,
         recompute="none", context=1, ring=False):
    p = {"tensor_parallel_degree": tensor, "pipeline_parallel_degree": pipeline,
         "microbatches": microbatches, "pipeline_schedule": schedule,
         "virtual_stages": virtual, "zero_stage": zero, "sequence_parallel": sp,
         "recompute": recompute}
    if context > 1:
        p["context_parallel_degree"] = context
    if ring:
        p["cp_comm_type"] = "p2p"
    return p


# name, ranks, plan: DP, ZeRO 1/2/3, TP (+SP), PP with each schedule, context
# parallelism (gathered and ring), their products with DP, and recomputation.
PLANS = [
    ("single", 1, plan()),
    ("dp2", 2, plan()),
    ("dp4", 4, plan()),
    ("zero1-dp4", 4, plan(zero=1)),
    ("zero2-dp2", 2, plan(zero=2)),
    ("zero3-dp4", 4, plan(zero=3)),
    ("tp2", 2, plan(tensor=2)),
    ("tp4", 4, plan(tensor=4)),
    ("tp2-sp", 2, plan(tensor=2, sp=True)),
    ("pp2-gpipe-m4", 2, plan(pipeline=2, microbatches=4, schedule="gpipe")),
    ("pp2-1f1b-m4", 2, plan(pipeline=2, microbatches=4)),
    ("pp2-zbh1-m4", 2, plan(pipeline=2, microbatches=4, schedule="zb_h1")),
    ("pp4-1f1b-m8", 4, plan(pipeline=4, microbatches=8)),
    ("pp4-zbh1-m4", 4, plan(pipeline=4, microbatches=4, schedule="zb_h1")),
    ("pp2-interleaved-m4", 2, plan(pipeline=2, microbatches=4, schedule="interleaved_1f1b",
                                   virtual=2)),
    ("tp2xdp2", 4, plan(tensor=2)),
    ("pp2xdp2-1f1b-m2", 4, plan(pipeline=2, microbatches=2)),
    ("dp2-full-recompute", 2, plan(recompute="full")),
    ("tp2-selective", 2, plan(tensor=2, recompute="selective")),
    ("pp2-1f1b-m4-full", 2, plan(pipeline=2, microbatches=4, recompute="full")),
    ("cp2", 2, plan(context=2)),
    ("cp4", 4, plan(context=4)),
    ("cp2xdp2", 4, plan(context=2)),
    ("cp2xtp2", 4, plan(context=2, tensor=2)),
    ("cp2xdp2-zero1", 4, plan(context=2, zero=1)),
    ("cp2-ring", 2, plan(context=2, ring=True)),
    ("cp4-ring", 4, plan(context=4, ring=True)),
    ("cp2xdp2-ring", 4, plan(context=2, ring=True)),
]


def export(out):
    python = os.path.join(ROOT, ".venv", "bin", "python")
    subprocess.run([python, os.path.join(ROOT, "scripts", "export_models.py"), "--out", out,
                    "--models", "gpt2", "--opsets", "17", "--size", "bench"],
                   check=True, capture_output=True)
    return os.path.join(out, "gpt2_op17_dyn.onnx")


def config_of(p):
    """--config takes the plan's keys but "recompute" when it is none (a
    trainer without recomputation refuses the key's other values)."""
    return {k: v for k, v in p.items() if not (k == "recompute" and v == "none")}


def busy_seconds():
    """CPU seconds the whole machine has been busy (all cores), /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(v) for v in f.readline().split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def wait_until_quiet(limit=0.05, seconds=2.0, patience=600):
    """Waits (at most `patience` s) for a window with others' load below `limit`."""
    start = time.time()
    while time.time() - start < patience:
        before = busy_seconds()
        time.sleep(seconds)
        if (busy_seconds() - before) / (seconds * os.cpu_count()) < limit:
            return
    print("warning: the machine stayed busy; measuring anyway", file=sys.stderr)


def others_share(busy_before, mine_before, wall):
    """Share of the machine used by processes other than our children."""
    mine = sum(os.times()[2:4]) - mine_before
    return max(0.0, busy_seconds() - busy_before - mine) / (wall * os.cpu_count())


def measure(args, model, data, ranks, p, work):
    """Median step time of a run no other process disturbed (see above)."""
    for attempt in range(1, args.tries + 1):
        wait_until_quiet()
        busy, mine, start = busy_seconds(), sum(os.times()[2:4]), time.time()
        result = measure_once(args, model, data, ranks, p, work)
        share = others_share(busy, mine, time.time() - start)
        if share < 0.05 or attempt == args.tries:
            return result + (attempt, share)
        print(f"  (other processes used {100 * share:.0f}% of the machine: measuring again)",
              file=sys.stderr, flush=True)


def measure_once(args, model, data, ranks, p, work):
    metrics = os.path.join(work, "metrics.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    command = ["mpirun", "--oversubscribe", "-np", str(ranks), args.trc_run, model,
               "--data", data, "--batch-size", str(args.batch), *seq_flags(args),
               "--steps", str(args.steps), "--metrics", metrics,
               "--config", json.dumps(config_of(p))]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"trc-run failed ({p}):\n{done.stderr}")
    with open(metrics) as f:
        times = [json.loads(line)["step_time_ms"] for line in f]
    return statistics.median(times[2:]) / 1000.0, times


def seq_flags(args):
    """Token rows take --seq; rows from an .npz come shaped."""
    return [] if args.data else ["--seq-len", str(args.seq)]


def predict(args, model, ranks, p):
    dims = f"batch={args.batch}" + ("" if args.data else f",sequence={args.seq}")
    command = [args.trc_plan, "--model", model, "--dim", dims,
               "--cluster", f"cpu:{ranks}", "--device-profile", args.profile,
               "--global-batch", str(args.batch), "--plan", json.dumps(p), "--json"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"trc-plan failed ({p}):\n{done.stderr}")
    out = json.loads(done.stdout)
    want = {k: v for k, v in p.items()}
    got = out["plan"]
    for key, value in want.items():  # the plan priced is the plan given
        if got.get(key, value) != value and not (key == "virtual_stages" and p["pipeline_parallel_degree"] == 1):
            sys.exit(f"trc-plan priced another plan: {key} {got.get(key)} != {value}")
    return out["predicted"]


def ranks_of(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    for position, i in enumerate(order):
        r[i] = float(position)
    return r


def spearman(x, y):
    rx, ry = ranks_of(x), ranks_of(y)
    mx, my = statistics.mean(rx), statistics.mean(ry)
    num = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    den = (sum((a - mx) ** 2 for a in rx) * sum((b - my) ** 2 for b in ry)) ** 0.5
    return num / den if den else 1.0


def concordant(rows, margin=0.0):
    """Pairs the prediction orders as the measurement does, and all pairs
    (with `margin`: only pairs whose predictions differ by more than it)."""
    agree = total = 0
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            a, b = rows[i]["predicted"], rows[j]["predicted"]
            if abs(a - b) <= margin * min(a, b):
                continue
            total += 1
            agree += (rows[i]["predicted"] - rows[j]["predicted"]) * \
                     (rows[i]["measured"] - rows[j]["measured"]) > 0
    return agree, total


def calibrate(args):
    """The 1-, 2- and 4-rank entries of --profile, each from a run no other
    process disturbed (as the step times: see the module's docstring)."""
    for ranks in (1, 2, 4):
        command = ["mpirun", "--oversubscribe", "-np", str(ranks), args.trc_run, "--calibrate",
                   "--calibrate-out", args.profile]
        for attempt in range(1, args.tries + 1):
            wait_until_quiet()
            busy, mine, start = busy_seconds(), sum(os.times()[2:4]), time.time()
            done = subprocess.run(command, env=ENV, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"trc-run --calibrate failed at {ranks} ranks:\n{done.stderr}")
            share = others_share(busy, mine, time.time() - start)
            if share < 0.05 or attempt == args.tries:
                break
            print(f"  (other processes used {100 * share:.0f}% of the machine: calibrating again)",
                  file=sys.stderr, flush=True)
        print(done.stderr.strip(), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", required=True)
    parser.add_argument("--calibrate", action="store_true",
                        help="calibrate at 1, 2 and 4 ranks into --profile first")
    parser.add_argument("--plans", default="all")
    parser.add_argument("--model", help="an .onnx to measure instead of the bench GPT-2")
    parser.add_argument("--data", help="rows for --model (.npz, shaped as the model takes them: "
                        "no sequence length) instead of tinyshakespeare's tokens")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--trc-run", default=os.path.join(ROOT, "build", "tools", "trc-run",
                                                          "trc-run"))
    parser.add_argument("--trc-plan", default=os.path.join(ROOT, "build", "tools", "trc-plan",
                                                           "trc-plan"))
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--measured", help="reuse the measurements of an earlier --json (same "
                        "machine, same profile): price them again after a cost-model change "
                        "without training")
    args = parser.parse_args()
    if args.calibrate:
        calibrate(args)
    chosen = PLANS if args.plans == "all" else [p for p in PLANS if p[0] in args.plans.split(",")]
    data = args.data or os.path.join(os.path.dirname(ROOT), "shared", "data", "tinyshakespeare.txt")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        model = args.model or export(work)
        name = args.model or "bench GPT-2 (4 layers, hidden 256, 8 heads, vocab 256)"
        shape = f"{args.batch} rows of {args.data}" if args.data else f"{args.batch} x {args.seq}"
        print(f"{name}, batch {shape}, fp32 AdamW, median of steps "
              f"3-{args.steps}; profile {args.profile}")
        print(f"{'plan':<20}{'ranks':>6}{'predicted ms':>14}{'measured ms':>13}{'error':>9}"
              f"   predicted shares (compute/bubble/tp/cp/p2p/dp/optimizer)")
        saved = {}
        if args.measured:
            with open(args.measured) as f:
                saved = {r["plan"]: r for r in json.load(f)}
        for name, ranks, p in chosen:
            predicted = predict(args, model, ranks, p)
            if args.measured:
                if name not in saved:
                    sys.exit(f"--measured {args.measured}: no measurement of plan {name}")
                r = saved[name]
                measured, times, runs, noise = (r["measured"], r["steps_ms"], r["runs"],
                                                r["others_share"])
            else:
                measured, times, runs, noise = measure(args, model, data, ranks, p, work)
            t = predicted["step_time_s"]
            row = {"plan": name, "ranks": ranks, "config": p, "predicted": t,
                   "measured": measured, "error": t / measured - 1, "steps_ms": times,
                   "runs": runs, "others_share": noise}
            rows.append(row)
            shares = "/".join(f"{100 * predicted[k] / t:.0f}" for k in
                              ("compute_s", "bubble_s", "tensor_comm_s", "context_comm_s",
                               "p2p_s", "data_comm_s", "optimizer_s"))
            print(f"{name:<20}{ranks:>6}{1e3 * t:>14.1f}{1e3 * measured:>13.1f}"
                  f"{100 * row['error']:>+8.1f}%   {shares}"
                  f"{'' if runs == 1 else f'   ({runs} runs)'}", flush=True)
    mae = statistics.mean(abs(r["error"]) for r in rows)
    print(f"mean absolute error {100 * mae:.1f}% over {len(rows)} plans "
          f"(worst {100 * max(abs(r['error']) for r in rows):.1f}%)")
    agree, total = concordant(rows)
    print(f"ranking: Spearman {spearman([r['predicted'] for r in rows], [r['measured'] for r in rows]):.3f}, "
          f"{agree} of {total} plan pairs ordered as measured")
    agree, total = concordant(rows, 0.10)
    print(f"  pairs the predictions separate by more than 10%: {agree} of {total} ordered as "
          f"measured")
    for ranks in sorted({r["ranks"] for r in rows}):
        same = [r for r in rows if r["ranks"] == ranks]
        if len(same) > 1:
            a, n = concordant(same)
            best_p = min(same, key=lambda r: r["predicted"])["plan"]
            best_m = min(same, key=lambda r: r["measured"])["plan"]
            print(f"  {ranks} ranks: {a} of {n} pairs ordered as measured; fastest predicted "
                  f"{best_p}, fastest measured {best_m}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
