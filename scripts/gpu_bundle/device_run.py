#!/usr/bin/env python3
"""The GPU bundle's checks and measurements in one call (run.sh runs this).

Precondition: the folder holding this file is a bundle that
scripts/gpu-bundle.sh made (bundle.json lists its files). On a GPU machine
(driver, CUDA 13's cuBLASLt, compute-sanitizer, PyTorch) it runs, each phase
within what is left of --budget-s seconds (default 450: the device call's
8 minutes less start-up):

  tests       the runtime's CUDA tests with TRC_REQUIRE_GPU=1 (a missing GPU
              fails them instead of skipping);
  parity      the small GPT's saved CUDA steps (fp32, bf16) trained on the
              bundle's data, losses against the CPU's from the build machine
              (relative, per step: fp32 1e-4, bf16 2e-2), with trc-run's
              --profile: the GPU utilisation NVML gave its counters (mean
              gpu_percent over the steps, largest gpu_memory_mb);
  sanitizer   compute-sanitizer memcheck over 2 steps of the fp32 small GPT;
  throughput  GPT-2 124M (batch 8 x 1024): trc bf16/fp32 with CUDA graphs on
              and off, PyTorch eager and torch.compile (bf16 autocast, fp32),
              same data; tokens/s (median step after 5), peak GPU memory of
              the process (nvidia-smi every 50 ms), MFU for bf16 rows, and
              for trc the tokens/s bench/predict_gpu_step.py predicted
              (prediction.json) beside them;
  profile     ncu's device time per kernel over one GPT-2 124M bf16 step
              (graphs off), the top kernels.

It writes OUT/results.json (after every phase, so a cut-off run keeps what
it measured) and OUT/log.txt, prints a table last, and exits 1 when a phase
failed. A number appears only where it was measured; anything not run says
why. --dry-run runs the same logic on a machine without a GPU against the
tests' fake driver (fake-cuda/): the bundle's completeness, the tests' host
side, two steps of each small step; no timing, no comparison, no PyTorch.
"""
import argparse
import datetime
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

BUNDLE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(BUNDLE, "bench"))
import train_gpu  # noqa: E402  (GpuMemorySampler, TORCH_CHILD, peaks: one copy of each)

WARMUP = 5


class Run:
    """One call's state: the deadline, the log and the results written so far."""

    def __init__(self, out, dry, budget):
        self.out, self.dry = out, dry
        self.info = json.load(open(os.path.join(BUNDLE, "bundle.json")))
        self.deadline = time.monotonic() + budget
        self.log = open(os.path.join(out, "log.txt"), "w")
        self.results = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
                        "dry_run": dry, "phases": {}}
        self.env = dict(os.environ)

    def left(self):
        return self.deadline - time.monotonic()

    def say(self, text):
        print(text, flush=True)
        self.log.write(text + "\n")
        self.log.flush()

    def save(self):
        with open(os.path.join(self.out, "results.json"), "w") as f:
            json.dump(self.results, f, indent=1)

    def command(self, cmd, timeout, env=None, sample_gpu=False):
        """Runs cmd (output to the log); (status or None on timeout, output, peak bytes)."""
        timeout = max(1.0, min(timeout, self.left()))
        self.say("$ " + " ".join(cmd))
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 env=env or self.env, text=True, errors="replace")
        sampler = train_gpu.GpuMemorySampler(child.pid) if sample_gpu else None
        try:
            output, _ = child.communicate(timeout=timeout)
            status = child.returncode
        except subprocess.TimeoutExpired:
            child.kill()
            output, _ = child.communicate()
            status = None
            output += f"\n[killed after {timeout:.0f} s]"
        peak = sampler.finish() if sampler else 0
        self.log.write(output + "\n")
        self.log.flush()
        return status, output, peak or None


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1][:200] if lines else "(no output)"


def check_bundle(run, info):
    """Every file bundle.json lists is here with its size and hash."""
    bad = []
    for rel, want in info["files"].items():
        path = os.path.join(BUNDLE, rel)
        if not os.path.isfile(path):
            bad.append(f"{rel} is missing")
        elif hashlib.sha256(open(path, "rb").read()).hexdigest() != want["sha256"]:
            bad.append(f"{rel} differs from the bundle's record")
    run.results["bundle"] = {"commit": info["commit"], "files": len(info["files"]),
                             "complete": not bad, "problems": bad[:20]}
    return not bad


def find_cublaslt(run):
    """cuBLASLt from the loader's path, else the toolkit's or PyTorch's folder."""
    if run.env.get("TRC_CUBLASLT_LIBRARY"):
        return run.env["TRC_CUBLASLT_LIBRARY"]
    cache = subprocess.run(["sh", "-c", "ldconfig -p 2>/dev/null"], capture_output=True,
                           text=True).stdout
    if "libcublasLt.so.13 " in cache or "libcublasLt.so.12 " in cache:
        return "from the loader's path"
    folders = [os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "lib64"),
               "/usr/local/cuda/lib64"]
    try:
        import nvidia.cublas
        folders.append(os.path.join(os.path.dirname(nvidia.cublas.__file__), "lib"))
    except ImportError:
        pass
    for d in folders:
        for so in ("libcublasLt.so.13", "libcublasLt.so.12"):
            if os.path.exists(os.path.join(d, so)):
                run.env["LD_LIBRARY_PATH"] = d + ":" + run.env.get("LD_LIBRARY_PATH", "")
                return os.path.join(d, so)
    return None


def describe_machine(run):
    m = {}
    if run.dry:
        m["gpu"] = "none (dry run: the tests' fake driver)"
        return m
    q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                        "--format=csv,noheader"], capture_output=True, text=True)
    if q.returncode != 0 or not q.stdout.strip():
        raise SystemExit("device_run.py: error: nvidia-smi found no GPU: "
                         + last_line(q.stdout + q.stderr))
    name, driver, memory = [f.strip() for f in q.stdout.splitlines()[0].split(",")]
    m.update(gpu=name, driver=driver, memory=memory)
    m["cublaslt"] = find_cublaslt(run)
    try:
        import torch
        m["torch"] = torch.__version__
    except ImportError:
        m["torch"] = None
    return m


def phase_tests(run):
    rows = {}
    for name in ("backends", "artifact"):
        report = os.path.join(run.out, f"gtest-{name}.json")
        cmd = [os.path.join(BUNDLE, "bin", f"trc-{name}-tests"), f"--gtest_output=json:{report}"]
        env = dict(run.env, TRC_REQUIRE_GPU="1", TRC_TEST_FIXTURES=os.path.join(BUNDLE, "fixtures"))
        if run.dry:  # the host side only, as ctest's *-fake-cuda tests run it
            cmd.append("--gtest_filter=Cuda*:Backend.*:-CudaDriver.*")
            env["TRC_CUBLASLT_LIBRARY"] = ""
        status, output, _ = run.command(cmd, 150, env)
        row = {"status": status}
        if os.path.exists(report):
            r = json.load(open(report))
            cases = [c for s in r.get("testsuites", []) for c in s.get("testsuite", [])]
            row.update(tests=r.get("tests"), failures=r.get("failures"),
                       skipped=sum(c.get("result") == "SKIPPED" for c in cases),
                       failed=[f"{c['classname']}.{c['name']}" for c in cases if c.get("failures")])
        device = [l for l in output.splitlines() if l.startswith("[ CUDA     ]")]
        if device:
            row["device"] = device[0][len("[ CUDA     ] "):]
        rows[name] = row
    ok = all(r["status"] == 0 and r.get("failures") == 0 for r in rows.values())
    # The fake driver must never be what a real run measures.
    fake = any("fake" in r.get("device", "") for r in rows.values())
    if fake and not run.dry:
        return {"ok": False, "error": "the driver found is the tests' fake libcuda", **rows}
    return {"ok": ok, **rows}


def train(run, step, steps, timeout, extra_env=None, sample_gpu=False, prefix=(), extra=()):
    """Trains a saved step of the bundle; (status, losses, step ms, peak, output)."""
    cfg = run.info["parity"] if step.startswith("small") else run.info["throughput"]
    metrics = os.path.join(run.out, f"metrics-{step}.jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    cmd = list(prefix) + [
        os.path.join(BUNDLE, "bin", "trc-run"), os.path.join(BUNDLE, "steps", step),
        "--device", "cuda", "--data", os.path.join(BUNDLE, "data", "tokens.txt"),
        "--batch-size", str(cfg["batch"]), "--seq-len", str(cfg["seq"]),
        "--steps", str(steps), "--lr", str(cfg["lr"]), "--metrics", metrics, *extra]
    env = dict(run.env, **(extra_env or {}))
    if run.dry:  # a model's products on the fake's CPU loops take minutes: checked only
        env["TRC_FAKE_CUBLASLT_CHECK_ONLY"] = "1"
    status, output, peak = run.command(cmd, timeout, env, sample_gpu)
    rows = [json.loads(l) for l in open(metrics)] if os.path.exists(metrics) else []
    return status, [r["loss"] for r in rows], [r["step_time_ms"] for r in rows], peak, output


def gpu_counters(trace_path):
    """The utilisation counters of trc-run's --profile trace: (gpu_percent
    samples, gpu_memory_mb samples); empty lists where there are none."""
    try:
        events = json.load(open(trace_path))["traceEvents"]
    except (OSError, ValueError, KeyError):
        return [], []
    args = [e.get("args", {}) for e in events if e.get("ph") == "C"]
    return ([a["gpu_percent"] for a in args if "gpu_percent" in a],
            [a["gpu_memory_mb"] for a in args if "gpu_memory_mb" in a])


def phase_parity(run):
    info = run.info["parity"]
    out = {}
    for p in ("fp32", "bf16"):
        ref = json.load(open(os.path.join(BUNDLE, "reference", f"small-gpt-{p}.json")))["losses"]
        steps = 2 if run.dry else info["steps"]
        trace = os.path.join(run.out, f"trace-small-gpt-{p}.json")
        status, losses, _, _, output = train(run, f"small-gpt-{p}", steps, 120,
                                             extra=("--profile", trace))
        row = {"status": status, "steps": len(losses)}
        busy, memory = gpu_counters(trace)
        if not busy:  # trc-run says why on its profile line
            row["gpu_counters"] = "none: " + next(
                (l for l in output.splitlines() if "no GPU utilisation" in l), "not in the trace")
        elif run.dry:
            row["gpu_counters"] = f"present ({len(busy)} samples of the fake NVML)"
        else:  # the first sample precedes every step: not part of the run
            row.update(gpu_percent_mean=statistics.mean(busy[1:] or busy),
                       gpu_memory_mb_max=max(memory))
        if status != 0 or len(losses) != steps:
            row.update(ok=False, error=last_line(output))
        elif run.dry:
            row.update(ok=True, compared="not compared: dry run (the fake driver runs no kernels)")
        else:
            diffs = [abs(a - b) / max(abs(b), 1e-12) for a, b in zip(losses, ref)]
            tol = info["tolerance"][p]
            finite = all(x == x and abs(x) != float("inf") for x in losses)
            row.update(ok=finite and max(diffs) <= tol, max_rel_diff=max(diffs), tolerance=tol,
                       cuda_losses=losses, cpu_losses=ref[:steps])
        out[p] = row
    return {"ok": all(r["ok"] for r in out.values()), **out}


def phase_sanitizer(run):
    tool = shutil.which("compute-sanitizer") or next(
        (p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)
    if run.dry:
        return {"ok": True, "skipped": "dry run" + ("" if tool else
                                                     " (and no compute-sanitizer here)")}
    if not tool:
        return {"ok": False, "error": "compute-sanitizer not found"}
    status, _, _, _, output = train(run, "small-gpt-fp32", 2, 240,
                                    prefix=[tool, "--tool", "memcheck", "--error-exitcode", "86"])
    summary = [l for l in output.splitlines() if "ERROR SUMMARY" in l]
    row = {"status": status, "summary": summary[-1].strip() if summary else None}
    row["ok"] = status == 0 and bool(summary) and " 0 errors" in summary[-1]
    if not row["ok"]:
        row["error"] = last_line(output)
    return row


def ncu_seconds(value, unit):
    scale = {"nsecond": 1e-9, "ns": 1e-9, "usecond": 1e-6, "us": 1e-6, "msecond": 1e-3,
             "ms": 1e-3, "second": 1.0, "s": 1.0}
    return float(value.replace(",", "")) * scale[unit]


def phase_profile(run):
    """Per-kernel device time of one GPT-2 124M bf16 step (ncu's
    gpu__time_duration, CUDA graphs off so each kernel is seen), top kernels."""
    tool = shutil.which("ncu") or next((p for p in ("/usr/local/cuda/bin/ncu",)
                                        if os.path.exists(p)), None)
    if run.dry:
        return {"ok": True, "skipped": "dry run" + ("" if tool else " (and no ncu here)")}
    if not tool:
        return {"ok": False, "error": "ncu not found"}
    if run.left() < 60:
        return {"ok": False, "error": "out of the call's time budget"}
    report = os.path.join(run.out, "ncu.csv")
    cfg = run.info["throughput"]
    status, _, _, _, output = train(
        run, f"{cfg['model']}-bf16", 1, min(200, run.left() - 10), {"TRC_CUDA_GRAPHS": "0"},
        prefix=[tool, "--clock-control", "none", "--metrics", "gpu__time_duration.sum",
                "--csv", "--log-file", report])
    import csv
    kernels = {}
    if os.path.exists(report):
        lines = open(report, errors="replace").read().splitlines()
        start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
        if start is not None:
            for r in csv.DictReader(lines[start:]):
                if r.get("Metric Name") != "gpu__time_duration.sum":
                    continue
                k = kernels.setdefault(r["Kernel Name"][:120], [0.0, 0])
                k[0] += ncu_seconds(r["Metric Value"], r["Metric Unit"])
                k[1] += 1
    if not kernels:
        return {"ok": False, "status": status, "error": last_line(output)}
    total = sum(t for t, _ in kernels.values())
    top = sorted(kernels.items(), key=lambda kv: -kv[1][0])[:25]
    return {"ok": True, "status": status, "steps": 1, "kernel_launches":
            sum(n for _, n in kernels.values()), "kernel_ms": total * 1e3,
            "top": [{"kernel": k, "ms": t * 1e3, "share": t / total, "launches": n}
                    for k, (t, n) in top]}


def predicted_tokens_per_s(cfg, gpu, precision, graphs):
    """bench/predict_gpu_step.py's tokens/s for this model, batch and card
    (the workplace's measured ceilings), or None when the bundle has none."""
    path = os.path.join(BUNDLE, "prediction.json")
    if not os.path.exists(path):
        return None
    prediction = json.load(open(path))
    if [prediction.get(k) for k in ("model", "batch", "seq")] != [cfg[k] for k in
                                                                   ("model", "batch", "seq")]:
        return None
    rows = prediction.get("precisions", {}).get(precision, {}).get("predicted", [])
    for r in rows:
        card = r["card"].split()[0]  # "H100 SXM" -> H100
        if card in gpu and r["ceilings"] == "measured" and r["cuda_graphs"] == f"graphs {graphs}":
            return r["tokens_per_s"]
    return None


def median_ms(times):
    return statistics.median(times[WARMUP:] if len(times) > WARMUP else times)


def phase_throughput(run, machine):
    cfg = run.info["throughput"]
    tokens_per_step = cfg["batch"] * cfg["seq"]
    steps = 20
    # The comparisons that matter first, in case the budget runs out.
    plans = [(e, p, g) for p in ("bf16", "fp32") for e, g in
             (("trc", "on"), ("torch eager", None), ("torch compile", None), ("trc", "off"))]
    if run.dry:
        compile(train_gpu.TORCH_CHILD, "TORCH_CHILD", "exec")  # the script at least parses
        # The child imports export_models, which imports trc.onnx_export: from
        # the bundle, not from this checkout's packages (the GPU has none).
        status, output, _ = run.command(
            [sys.executable, "-c", "import os, sys; sys.path.insert(0, sys.argv[1]); "
             "import export_models, trc.onnx_export as m; print(os.path.abspath(m.__file__))",
             os.path.join(BUNDLE, "scripts")], 60)
        where = last_line(output)
        if status != 0 or not where.startswith(os.path.abspath(BUNDLE) + os.sep):
            return {"ok": False, "error": "the PyTorch child's imports do not come from the "
                    f"bundle: {where}"}
        return {"ok": True, "skipped": "dry run: nothing is timed without a GPU",
                "planned": [f"{e} {p}" + (f" graphs {g}" if g else "") for e, p, g in plans]}
    peak_tflops = next((v for k, v in train_gpu.DENSE_BF16_TFLOPS.items()
                        if k in machine.get("gpu", "")), None)
    flops = None
    try:
        flops, params = train_gpu.model_flops_per_token(cfg["model"], cfg["seq"],
                                                         root=BUNDLE)
    except Exception as e:  # PyTorch missing: no MFU, the rest still runs
        run.say(f"model FLOPs not counted: {e}")
    rows = []
    for engine, precision, graphs in plans:
        row = {"engine": engine, "precision": precision, "batch": cfg["batch"],
               "seq": cfg["seq"]}
        if graphs:
            row["cuda_graphs"] = graphs
        if run.left() < 45:
            row["not_run"] = "out of the call's time budget"
            rows.append(row)
            continue
        if engine == "trc":
            status, losses, times, peak, output = train(
                run, f"{cfg['model']}-{precision}", steps, 150,
                {"TRC_CUDA_GRAPHS": "1" if graphs == "on" else "0"}, sample_gpu=True)
            ok = status == 0 and len(times) == steps
        else:
            mode = engine.split()[1]
            status, output, peak = run.command(
                [sys.executable, "-c", train_gpu.TORCH_CHILD, BUNDLE, cfg["model"],
                 str(cfg["batch"]), str(cfg["seq"]), str(steps),
                 os.path.join(BUNDLE, "data", "tokens.txt"), mode, "cuda", precision],
                240, sample_gpu=True)
            ok = status == 0
            # The child prints one JSON line; warnings may come around it.
            lines = [l for l in output.splitlines() if l.startswith('{"times"')]
            ok = ok and bool(lines)
            if ok:
                r = json.loads(lines[-1])
                times, losses = r["times"], r["losses"]
                row["torch_max_reserved_bytes"] = r["reserved"]
        if not ok:
            row["error"] = last_line(output)
        else:
            ms = median_ms(times)
            row.update(median_step_ms=ms, tokens_per_s=tokens_per_step / (ms / 1e3),
                       first_step_ms=times[0], last_loss=losses[-1])
            if peak:
                row["peak_gpu_bytes"] = peak
            if flops and peak_tflops and precision == "bf16":
                row["mfu"] = row["tokens_per_s"] * flops / (peak_tflops * 1e12)
        if engine == "trc":
            predicted = predicted_tokens_per_s(cfg, machine.get("gpu", ""), precision, graphs)
            if predicted:
                row["predicted_tokens_per_s"] = predicted
        rows.append(row)
    by = {(r["engine"], r["precision"], r.get("cuda_graphs", "on")): r for r in rows}
    ratios = {}
    for p in ("bf16", "fp32"):
        trc, eager, comp = (by.get(("trc", p, "on")), by.get(("torch eager", p, "on")),
                            by.get(("torch compile", p, "on")))
        if trc and comp and "tokens_per_s" in trc and "tokens_per_s" in comp:
            ratios[f"{p} tokens/s trc/torch.compile"] = trc["tokens_per_s"] / comp["tokens_per_s"]
        if trc and eager and "tokens_per_s" in trc and "tokens_per_s" in eager:
            ratios[f"{p} tokens/s trc/eager"] = trc["tokens_per_s"] / eager["tokens_per_s"]
        if trc and eager and trc.get("peak_gpu_bytes") and eager.get("peak_gpu_bytes"):
            ratios[f"{p} peak memory trc/eager"] = trc["peak_gpu_bytes"] / eager["peak_gpu_bytes"]
    return {"ok": all("error" not in r for r in rows), "model_flops_per_token": flops,
            "peak_bf16_tflops": peak_tflops, "rows": rows, "ratios": ratios}


def print_table(run):
    res = run.results
    run.say("")
    run.say(f"trc GPU bundle {res['bundle']['commit'][:10]} on {res['machine'].get('gpu')}"
            + (" (DRY RUN: nothing measured)" if run.dry else ""))
    for name, ph in res["phases"].items():
        state = "ok" if ph.get("ok") else "FAILED"
        why = ph.get("error") or ph.get("skipped") or ""
        run.say(f"  {name:<11} {state:<7} {why}")
    tests = res["phases"].get("tests", {})
    for k in ("backends", "artifact"):
        if k in tests and "tests" in tests[k]:
            t = tests[k]
            run.say(f"    trc-{k}-tests: {t['tests']} tests, {t['failures']} failed, "
                    f"{t['skipped']} skipped {', '.join(t['failed'][:5])}")
    for p, r in res["phases"].get("parity", {}).items():
        if isinstance(r, dict) and "max_rel_diff" in r:
            run.say(f"    parity {p}: max relative loss difference {r['max_rel_diff']:.2e} over "
                    f"{r['steps']} steps (tolerance {r['tolerance']:g})")
        elif isinstance(r, dict) and "error" in r:
            run.say(f"    parity {p}: {r['error']}")
        if isinstance(r, dict) and "gpu_percent_mean" in r:
            run.say(f"    parity {p}: GPU {r['gpu_percent_mean']:.0f}% busy (NVML, mean over the "
                    f"steps), {r['gpu_memory_mb_max']:.0f} MiB in use at most")
    rows = res["phases"].get("throughput", {}).get("rows", [])
    if rows:
        run.say(f"    {'engine':<14} {'prec':<5} {'graphs':<6} {'tokens/s':>10} {'ms/step':>9} "
                f"{'peak GiB':>9} {'MFU':>6} {'predicted':>9}")
    for r in rows:
        tok = f"{r['tokens_per_s']:10.0f}" if "tokens_per_s" in r else f"{'-':>10}"
        ms = f"{r['median_step_ms']:9.1f}" if "median_step_ms" in r else f"{'-':>9}"
        peak = f"{r['peak_gpu_bytes'] / 2**30:9.2f}" if r.get("peak_gpu_bytes") else f"{'-':>9}"
        mfu = f"{100 * r['mfu']:5.1f}%" if "mfu" in r else f"{'-':>6}"
        pred = (f"{r['predicted_tokens_per_s']:9.0f}" if "predicted_tokens_per_s" in r
                else f"{'-':>9}")
        note = r.get("error") or r.get("not_run") or ""
        run.say(f"    {r['engine']:<14} {r['precision']:<5} {r.get('cuda_graphs', '-'):<6} "
                f"{tok} {ms} {peak} {mfu} {pred}  {note}")
    for k, v in res["phases"].get("throughput", {}).get("ratios", {}).items():
        run.say(f"    {k}: {v:.2f}")
    prof = res["phases"].get("profile", {})
    if prof.get("top"):
        run.say(f"    profile: {prof['kernel_launches']} kernels, {prof['kernel_ms']:.1f} ms "
                "of device time in one bf16 step (first step: no graphs)")
        for k in prof["top"][:12]:
            run.say(f"      {k['ms']:8.2f} ms {100 * k['share']:5.1f}% x{k['launches']:<4} "
                    f"{k['kernel'][:70]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="folder for results.json and log.txt")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: the tests' fake driver, nothing timed or compared")
    ap.add_argument("--budget-s", type=float, default=450.0)
    ap.add_argument("--phases", default="tests,parity,sanitizer,throughput,profile")
    a = ap.parse_args()
    phases = a.phases.split(",")
    unknown = sorted(set(phases) - {"tests", "parity", "sanitizer", "throughput", "profile"})
    if unknown:
        sys.exit(f"device_run.py: error: unknown phase(s) {', '.join(unknown)} in --phases")
    os.makedirs(a.out, exist_ok=True)
    run = Run(a.out, a.dry_run, a.budget_s)
    if not check_bundle(run, run.info):
        run.save()
        sys.exit("device_run.py: error: the bundle is incomplete: "
                 + "; ".join(run.results["bundle"]["problems"][:5]))
    lib = [os.path.join(BUNDLE, "lib")]
    if a.dry_run:
        lib.insert(0, os.path.join(BUNDLE, "fake-cuda"))
    run.env["LD_LIBRARY_PATH"] = ":".join(lib + [p for p in [run.env.get("LD_LIBRARY_PATH")] if p])
    run.results["machine"] = describe_machine(run)
    run.save()
    for name in phases:
        run.say(f"== {name} ({run.left():.0f} s left)")
        try:
            if name == "throughput":
                result = phase_throughput(run, run.results["machine"])
            else:
                result = {"tests": phase_tests, "parity": phase_parity,
                          "sanitizer": phase_sanitizer, "profile": phase_profile}[name](run)
        except Exception as e:  # one broken phase must not cost the others
            result = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        run.results["phases"][name] = result
        run.save()
    print_table(run)
    sys.exit(0 if all(p.get("ok") for p in run.results["phases"].values()) else 1)


if __name__ == "__main__":
    main()
