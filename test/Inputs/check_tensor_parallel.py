#!/usr/bin/env python3
"""Tensor-parallel training checks of trc-run under mpirun, for
test/Training/tensor-parallel.test.

  check_tensor_parallel.py TRC_RUN MODELS_DIR DATA WORKDIR

With the same global batch (4 rows of 16 tokens, AdamW, 20 steps), against
each model's 1-rank run (losses within 1e-5 relative):
  * GPT-2, BERT, GPT-J and Llama-style exports (MODELS_DIR/<m>_op17_dyn.onnx)
    at tensor degree 2, and GPT-2, BERT and GPT-J at 4, those three also with
    sequence parallelism;
  * GPT-2 at tensor 2 x data 2 under DDP, ZeRO-1 (also with sequence
    parallelism) and ZeRO-3, and at tensor 2
    with global-norm gradient clipping;
  * GPT-2 on 4 ranks with `--config auto` (the planner's plan), and with
    `"auto_partition": true` optimizing memory on a measured profile;
  * a GPT-2 checkpoint written at step 10 by tensor degree 4 resumes at
    tensor 2 x data 2 and on 1 rank and continues the 1-rank curve;
  * refused with an error naming the cause: the Llama export at degree 4
    (2 key/value heads), a tensor degree that does not divide the world.
Prints what it compared; exits 1 with the reason when a check fails.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import compare, fail, refused, train  # noqa: E402


def main():
    if len(sys.argv) != 5:
        fail(__doc__)
    trc_run, models, data, work = sys.argv[1:]
    if shutil.which("mpirun") is None:
        print("SKIPPED: mpirun is not installed")
        return
    os.makedirs(work, exist_ok=True)

    def run(model, ranks, name, steps, config=None, extra=()):
        return train(trc_run, os.path.join(models, f"{model}_op17_dyn.onnx"), data, work,
                     ranks, name, steps, config, extra)

    reference = {}
    for model, degrees in (("gpt2", (2, 4)), ("bert", (2, 4)), ("gptj", (2, 4)),
                           ("llama", (2,))):
        reference[model] = run(model, 1, f"{model}-1", 20)
        for tp in degrees:
            compare(f"{model} tp={tp}", reference[model],
                    run(model, tp, f"{model}-tp{tp}", 20, {"tensor_parallel_degree": tp}))
            if model != "llama":  # (its RMSNorm is not a layer_norm op: no sequence split)
                compare(f"{model} tp={tp} sequence parallel", reference[model],
                        run(model, tp, f"{model}-sp{tp}", 20,
                            {"tensor_parallel_degree": tp, "sequence_parallel": True}))

    gpt2 = reference["gpt2"]
    for name, config in (("ddp", {}), ("zero1", {"zero_stage": 1}),
                         ("zero3", {"zero_stage": 3}),
                         ("zero1 sequence parallel", {"zero_stage": 1, "sequence_parallel": True})):
        compare(f"gpt2 tp=2 x dp=2 {name}", gpt2,
                run("gpt2", 4, f"gpt2-tp2-dp2-{name.replace(' ', '-')}", 20,
                    {"tensor_parallel_degree": 2, "ddp": True, **config}))
    clip = ["--clip-grad-norm", "0.5"]
    compare("gpt2 tp=2 clipped", run("gpt2", 1, "gpt2-1-clip", 20, extra=clip),
            run("gpt2", 2, "gpt2-tp2-clip", 20, {"tensor_parallel_degree": 2}, clip))

    # The planner's choice for 4 CPU ranks trains the same curve; so does
    # SageMaker's auto_partition, memory-weighted, priced with a measured
    # device profile.
    compare("gpt2 --config auto on 4 ranks", gpt2,
            run("gpt2", 4, "gpt2-auto", 20, extra=["--config", "auto"]))
    profile = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Plan", "Inputs",
                           "cpu-profile.json")
    compare("gpt2 auto_partition (memory) on 4 ranks", gpt2,
            run("gpt2", 4, "gpt2-auto-partition", 20,
                {"auto_partition": True, "optimize": "memory", "memory_weight": 0.5},
                ["--device-profile", profile]))

    # Resharded resume: tensor degree 4 writes step 10; tensor 2 x data 2
    # and 1 rank continue to step 20 from copies of it.
    checkpoint = os.path.join(work, "ckpt-tp4")
    run("gpt2", 4, "resume-first", 10, {"tensor_parallel_degree": 4},
        ["--checkpoint-dir", checkpoint, "--checkpoint-every", "10"])
    for ranks, config, label in ((4, {"tensor_parallel_degree": 2, "ddp": True}, "tp=2 x dp=2"),
                                 (1, None, "1 rank")):
        copy = os.path.join(work, f"ckpt-tp4-to-{ranks}")
        shutil.copytree(checkpoint, copy)
        shutil.copy(os.path.join(work, "resume-first.jsonl"),
                    os.path.join(work, f"resumed-{ranks}.jsonl"))
        losses = run("gpt2", ranks, f"resumed-{ranks}", 20, config,
                     ["--checkpoint-dir", copy, "--resume"])
        compare(f"tp=4 checkpoint resumed at {label}", gpt2, losses)

    refused(trc_run, os.path.join(models, "llama_op17_dyn.onnx"), data, 4,
            '{"tensor_parallel_degree": 4}',
            "attention key/value heads 2 is not divisible by tensor degree 4",
            "llama tp=4 (2 key/value heads)")
    refused(trc_run, os.path.join(models, "gpt2_op17_dyn.onnx"), data, 4,
            '{"tensor_parallel_degree": 3}', "tensor_parallel_degree", "tp=3 on 4 ranks")


if __name__ == "__main__":
    main()
