#!/usr/bin/env python3
"""Every plan trc-plan prints runs in trc-run (issue 28), for
test/Training/plans-run.test and test/Training/plans-run-any-model.test.

  check_plans_run.py TRC_PLAN TRC_RUN DATA WORKDIR MODEL[=ROWS.npz]...
      [--batch B] [--steps N] [--alternatives K] [--tolerance T]
      [--plan JSON] [--reference-config JSON]

For each model: trc-plan --json on cpu:4 (global batch B, default 4, of 16
tokens; a model given with its own ROWS.npz trains on those rows, shaped
as they are) with --alternatives K (default 3); every distinct plan it
prints, its JSON pasted as --config, trains N steps (default 12) under
mpirun -np 4 within T (default 1e-4, relative) of the 1-rank run (with
--reference-config JSON: of that plan on 4 ranks), and so does --config
auto. Prints each plan with its largest difference; exits 1
with the reason when a plan is refused or differs. --plan JSON is passed
to trc-plan (keys every plan must have; --config auto is then skipped).
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import compare, fail, train  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("trc_plan")
    p.add_argument("trc_run")
    p.add_argument("data")
    p.add_argument("work")
    p.add_argument("models", nargs="+")
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--alternatives", type=int, default=3)
    p.add_argument("--tolerance", type=float, default=1e-4)
    p.add_argument("--plan", default=None, help="trc-plan's --plan: keys the plans must have")
    p.add_argument("--reference-config", default=None,
                   help="the reference: this --config on 4 ranks instead of 1 rank")
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    for spec in a.models:
        model, _, rows = spec.partition("=")
        data = rows or a.data
        seq_len = None if rows else 16
        dims = f"batch={a.batch}" + ("" if rows else ",sequence=16")
        name = os.path.basename(model).split(".")[0].replace("_op17_dyn", "")

        def run(ranks, label, plan=None, extra=()):
            return train(a.trc_run, model, data, a.work, ranks, label, a.steps, plan,
                         extra=extra, batch=a.batch, seq_len=seq_len)

        if a.reference_config:
            reference = run(4, f"{name}-reference", json.loads(a.reference_config))
        else:
            reference = run(1, f"{name}-1")
        printed = subprocess.run([a.trc_plan, "--model", model, "--dim", dims,
                                  "--cluster", "cpu:4", "--global-batch", str(a.batch),
                                  "--alternatives", str(a.alternatives), "--json"] +
                                 (["--plan", a.plan] if a.plan else []),
                                 capture_output=True, text=True)
        if printed.returncode:
            fail(f"{name}: trc-plan failed:\n{printed.stderr}")
        result = json.loads(printed.stdout)
        plans = []
        for plan in [result["plan"]] + [alt["plan"] for alt in result["alternatives"]]:
            if plan not in plans:
                plans.append(plan)
        for i, plan in enumerate(plans):
            layout = (f"tensor={plan['tensor_parallel_degree']} "
                      f"pipeline={plan['pipeline_parallel_degree']} "
                      f"zero={plan['zero_stage']} recompute={plan['recompute']}")
            compare(f"{name} plan {i} ({layout})", reference,
                    run(4, f"{name}-plan{i}", plan), tolerance=a.tolerance)
        if a.plan:
            continue
        compare(f"{name} --config auto", reference,
                run(4, f"{name}-auto", extra=["--config", "auto"]), tolerance=a.tolerance)


if __name__ == "__main__":
    main()
