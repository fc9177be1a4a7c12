#!/usr/bin/env python3
"""Every plan trc-plan prints runs in trc-run (issue 28), for
test/Training/plans-run.test.

  check_plans_run.py TRC_PLAN TRC_RUN DATA WORKDIR MODEL.onnx...

For each model: trc-plan --json on cpu:4 (global batch 4 of 16 tokens) with
--alternatives 3; every distinct plan it prints, its JSON pasted as --config,
trains 12 steps under mpirun -np 4 within 1e-4 of the 1-rank run, and so
does --config auto. Prints each plan with its largest difference; exits 1
with the reason when a plan is refused or differs.
"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import compare, fail, train  # noqa: E402

STEPS = 12


def main():
    if len(sys.argv) < 6:
        fail(__doc__)
    trc_plan, trc_run, data, work = sys.argv[1:5]
    os.makedirs(work, exist_ok=True)
    for model in sys.argv[5:]:
        name = os.path.basename(model).split(".")[0].replace("_op17_dyn", "")
        reference = train(trc_run, model, data, work, 1, f"{name}-1", STEPS)
        printed = subprocess.run([trc_plan, "--model", model, "--dim", "batch=4,sequence=16",
                                  "--cluster", "cpu:4", "--global-batch", "4",
                                  "--alternatives", "3", "--json"],
                                 capture_output=True, text=True)
        if printed.returncode:
            fail(f"{name}: trc-plan failed:\n{printed.stderr}")
        result = json.loads(printed.stdout)
        plans = []
        for plan in [result["plan"]] + [a["plan"] for a in result["alternatives"]]:
            if plan not in plans:
                plans.append(plan)
        for i, plan in enumerate(plans):
            layout = (f"tensor={plan['tensor_parallel_degree']} "
                      f"pipeline={plan['pipeline_parallel_degree']} "
                      f"zero={plan['zero_stage']} recompute={plan['recompute']}")
            compare(f"{name} plan {i} ({layout})", reference,
                    train(trc_run, model, data, work, 4, f"{name}-plan{i}", STEPS, plan),
                    tolerance=1e-4)
        compare(f"{name} --config auto", reference,
                train(trc_run, model, data, work, 4, f"{name}-auto", STEPS,
                      extra=["--config", "auto"]), tolerance=1e-4)


if __name__ == "__main__":
    main()
