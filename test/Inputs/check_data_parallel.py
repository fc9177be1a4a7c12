#!/usr/bin/env python3
"""Data-parallel training checks of trc-run under mpirun, for
test/Training/data-parallel.test.

  check_data_parallel.py TRC_RUN MODEL.onnx DATA WORKDIR

With the same global batch (4 rows of 16 tokens, AdamW, 20 steps):
  * 2 and 4 ranks under DDP, ZeRO-1, ZeRO-2, ZeRO-3, and (4 ranks) hybrid
    sharding (ZeRO-3 within pairs, replicated across them) give the 1-rank
    run's per-step losses within 1e-5 relative;
  * a checkpoint written at step 10 by 4 ranks under hybrid ZeRO-3 resumes
    on 2 ranks (ZeRO-1) and on 1 rank and continues the 1-rank curve;
  * a global batch that does not split over the ranks is refused;
  * killing rank 1 mid-training ends the job within 60 s with an error
    naming rank 1.
Prints what it compared; exits 1 with the reason when a check fails.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import ENV, compare, fail, killed_rank, mpirun  # noqa: E402
from mpi_training import train as train_ranks  # noqa: E402


def train(args, ranks, name, steps, config=None, extra=()):
    return train_ranks(args.trc_run, args.model, args.data, args.work, ranks, name, steps,
                       config, extra)


class Args:
    pass


def main():
    if len(sys.argv) != 5:
        fail(__doc__)
    args = Args()
    args.trc_run, args.model, args.data, args.work = sys.argv[1:]
    if shutil.which("mpirun") is None:
        print("SKIPPED: mpirun is not installed")
        return
    os.makedirs(args.work, exist_ok=True)
    reference = train(args, 1, "one-rank", 20)
    for ranks in (2, 4):
        modes = [("ddp", {}), ("zero1", {"shard_optimizer_state": True}),
                 ("zero2", {"zero_stage": 2}), ("zero3", {"sharded_data_parallel_degree": ranks})]
        for name, config in modes:
            compare(f"{ranks} ranks {name}", reference,
                    train(args, ranks, f"{ranks}-{name}", 20, config))
    compare("4 ranks hybrid (ZeRO-3 in pairs)", reference,
            train(args, 4, "4-hybrid", 20, {"hybrid_shard_degree": 2}))
    compare("4 ranks hybrid (ZeRO-1 in pairs)", reference,
            train(args, 4, "4-hybrid-zero1", 20, {"zero_stage": 1, "hybrid_shard_degree": 2}))

    # Resharded resume: 4 ranks (hybrid ZeRO-3) write step 10; 2 ranks
    # (ZeRO-1) and 1 rank continue to step 20 from copies of it.
    checkpoint = os.path.join(args.work, "ckpt-4")
    train(args, 4, "resume-first", 10, {"hybrid_shard_degree": 2},
          ["--checkpoint-dir", checkpoint, "--checkpoint-every", "10"])
    for ranks, config in ((2, {"zero_stage": 1}), (1, None)):
        copy = os.path.join(args.work, f"ckpt-4-to-{ranks}")
        shutil.copytree(checkpoint, copy)
        shutil.copy(os.path.join(args.work, "resume-first.jsonl"),
                    os.path.join(args.work, f"resumed-{ranks}.jsonl"))
        losses = train(args, ranks, f"resumed-{ranks}", 20, config,
                       ["--checkpoint-dir", copy, "--resume"])
        compare(f"4-rank checkpoint resumed on {ranks}", reference, losses)
    # The global batch must split evenly over the ranks.
    done = subprocess.run(mpirun(2) + [args.trc_run, args.model, "--data", args.data,
                                       "--batch-size", "3", "--seq-len", "16", "--steps", "1"],
                          env=ENV, capture_output=True, text=True)
    expected = "error: --batch-size 3 is the global batch: it must be a multiple of the world size (2)"
    if done.returncode == 0 or expected not in done.stderr:
        fail("uneven batch: expected an error, got:\n" + done.stdout + done.stderr)
    print("uneven batch: refused")
    killed_rank(args.trc_run, args.model, args.data, args.work)


if __name__ == "__main__":
    main()
