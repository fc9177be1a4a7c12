#!/usr/bin/env python3
"""trc-run launched by Slurm's srun on a one-node Slurm cluster started for the
test (scripts/slurm_local.sh), for test/Training/srun.test.

  check_srun.py TRC_RUN MODELS DATA WORKDIR

With the same global batch (4 rows of 16 tokens, AdamW, 20 steps), srun -n 2
and srun -n 4 jobs wired up by PMIx (data parallel with ZeRO-1, tensor
parallel, pipeline parallel, tensor x data, pipeline x tensor) give the 1-rank
run's per-step losses within 1e-5; a 4-task checkpoint resumes under srun -n 2
on the same curve; a task killed by SIGKILL ends the job within 60 s naming
its rank; trc-launch --launcher srun relaunches a job whose task was killed
and it ends on the 1-rank curve. The cluster is stopped however the checks end. Prints SKIPPED when
Slurm is not installed (slurm_local.sh's exit status 3).
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_elastic  # noqa: E402
import mpi_training  # noqa: E402
from mpi_training import compare, fail, killed_rank, srun, train  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                      "slurm_local.sh")


def main():
    if len(sys.argv) != 5:
        fail(__doc__)
    trc_run, models, data, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    cluster = os.path.join(work, "slurm")
    started = subprocess.run(["bash", SCRIPT, "start", cluster], capture_output=True, text=True)
    if started.returncode == 3:
        print("SKIPPED: " + started.stderr.strip())
        return
    if started.returncode != 0:
        fail("the Slurm cluster did not start:\n" + started.stdout + started.stderr)
    try:
        mpi_training.ENV["SLURM_CONF"] = os.path.join(cluster, "slurm.conf")
        checks(trc_run, models, data, work)
    finally:
        subprocess.run(["bash", SCRIPT, "stop", cluster])


def checks(trc_run, models, data, work):
    gpt2 = os.path.join(models, "gpt2_op17_dyn.onnx")

    def run(ranks, name, config=None, extra=(), steps=20):
        return train(trc_run, gpt2, data, work, ranks, name, steps, config, extra,
                     launcher=srun if ranks > 1 else None)

    reference = run(1, "one-rank")
    for ranks, name, config in (
            (2, "data parallel zero1", {"zero_stage": 1}),
            (2, "tensor parallel", {"tensor_parallel_degree": 2}),
            (2, "pipeline 1f1b", {"pipeline_parallel_degree": 2, "microbatches": 2}),
            (4, "data parallel", {}),
            (4, "tensor 2 x data 2", {"tensor_parallel_degree": 2, "ddp": True}),
            (4, "pipeline 2 x tensor 2", {"pipeline_parallel_degree": 2, "microbatches": 2,
                                          "tensor_parallel_degree": 2})):
        compare(f"srun -n {ranks} {name}", reference,
                run(ranks, f"srun{ranks}-{name.replace(' ', '-')}", config))

    # A checkpoint of 4 tasks resumes on 2 (logical checkpoints reshard).
    checkpoint = os.path.join(work, "ckpt-srun4")
    first = run(4, "resume-first", {"tensor_parallel_degree": 2, "ddp": True},
                ["--checkpoint-dir", checkpoint, "--checkpoint-every", "10"], steps=10)
    rest = run(2, "resume-rest", {}, ["--checkpoint-dir", checkpoint, "--resume"])
    compare("srun -n 4 (tensor 2 x data 2) to step 10, srun -n 2 to step 20", reference,
            first + rest)

    killed_rank(trc_run, gpt2, data, work, ranks=2, name="srun killed task", launcher=srun)

    # trc-launch relaunches an srun job whose task was killed.
    elastic = check_elastic.Args()
    elastic.trc_launch, elastic.trc_run, elastic.model, elastic.data = (
        "trc-launch", trc_run, gpt2, data)
    elastic.work = work
    check_elastic.check_relaunch(elastic, run(1, "one-rank-30", steps=check_elastic.STEPS),
                                 "trc-launch srun -n 2, task 1 killed",
                                 ["--launcher", "srun", "-n", "2"], None, 2, 1)


if __name__ == "__main__":
    main()
