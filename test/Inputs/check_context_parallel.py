#!/usr/bin/env python3
"""Context-parallel training checks of trc-run under mpirun, for
test/Training/context-parallel.test (all_gather) and context-ring.test (p2p).

  check_context_parallel.py [--comm all_gather|p2p] TRC_RUN MODELS_DIR DATA WORKDIR [TORCH2_DIR]

With the same global batch (4 rows of 16 tokens, AdamW, 20 steps), against
each model's 1-rank run (losses within 1e-5 relative), with attention's keys
and values gathered (all_gather) or passed round the ring (p2p):
  * GPT-2, BERT, GPT-J and Llama-style (grouped-query attention, rotary)
    exports (MODELS_DIR/<m>_op17_dyn.onnx) at context degree 2, GPT-2,
    Llama and BERT also at 4 (each rank 8 or 4 positions of every row);
  * with TORCH2_DIR (test/Inputs/torch2): Hugging Face Llama and Qwen3 as
    torch 2.x exports them (labels shifted in the graph, attention masks),
    at context degree 2;
  * at context 2 x tensor 2 (Megatron's layout on each rank's positions):
    GPT-2, GPT-J and Llama (all_gather), GPT-2 and Llama (p2p);
  * GPT-2 at context 2 x data 2 under ZeRO-1 (and DDP and ZeRO-2 with
    hybrid_shard_degree 2: all_gather; ZeRO shards over data x context), and at
    context 2 x pipeline 2 (1F1B; ZB-H1, Llama-style and ZeRO-2: all_gather);
  * GPT-2 at context degree 2 in bf16 (and fp16: all_gather), within 2e-2 of
    one rank at the same precision;
  * a GPT-2 checkpoint written at step 10 by context degree 2 under ZeRO-1
    (its optimizer state sharded over the two context ranks) resumes on 1
    rank (and at tensor degree 2: all_gather) and continues the 1-rank curve
    (checkpoints are logical);
  * the ring (p2p) splits each sequence head-tail by default (causal load
    balancing: rank r holds chunks r and 2C-1-r and skips the hidden
    sub-blocks): GPT-2 also with cp_load_balance false (contiguous chunks,
    every block computed) at 2 and 4, and GPT-2 with a prefix-LM mask
    (MODELS_DIR/gpt2_op17_prefix_dyn.onnx: not causal by chunks, every
    block kept) at 2 and 4; the all-gather form with
    cp_load_balance true (GPT-2 and Llama at 2, GPT-2 at 4);
  * refused with an error naming the cause: a sequence the degree does not
    divide (twice the degree with balancing), context with sequence
    parallelism (both split the positions), the ring with unfused attention.
Prints what it compared; exits 1 with the reason when a check fails.
"""
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import compare, fail, refused, train  # noqa: E402


def main():
    args = sys.argv[1:]
    comm = "all_gather"
    if args[:1] == ["--comm"] and len(args) > 1:
        comm, args = args[1], args[2:]
    if len(args) not in (4, 5) or comm not in ("all_gather", "p2p"):
        fail(__doc__)
    trc_run, models, data, work = args[:4]
    torch2 = args[4] if len(args) == 5 else None
    ring = comm == "p2p"
    tag = " p2p" if ring else ""
    if shutil.which("mpirun") is None:
        print("SKIPPED: mpirun is not installed")
        return
    os.makedirs(work, exist_ok=True)

    def model_path(model):
        return os.path.join(models, f"{model}_op17_dyn.onnx")

    def run(model, ranks, name, steps, config=None, extra=()):
        if config and config.get("context_parallel_degree", 1) > 1:
            config = dict(config, cp_comm_type=comm)
            name += "-" + comm
        return train(trc_run, model_path(model), data, work, ranks, name, steps, config, extra)

    reference = {}
    for model in ("gpt2", "bert", "gptj", "llama"):
        reference[model] = run(model, 1, f"{model}-1", 20)
        for cp in (2, 4) if model in ("gpt2", "llama", "bert") else (2,):
            compare(f"{model} cp={cp}{tag}", reference[model],
                    run(model, cp, f"{model}-cp{cp}", 20, {"context_parallel_degree": cp}))

    # A prefix-LM mask (the first 6 positions visible to every query) is not
    # causal by chunks: the balanced ring keeps all its blocks and picks
    # each block's mask columns (the chunk pair s, 2C-1-s) by table.
    if ring:
        path = os.path.join(models, "gpt2_op17_prefix_dyn.onnx")
        prefix = train(trc_run, path, data, work, 1, "gpt2-prefix-1", 20)
        for cp in (2, 4):
            compare(f"gpt2 prefix-LM mask cp={cp}{tag}", prefix,
                    train(trc_run, path, data, work, cp, f"gpt2-prefix-cp{cp}", 20,
                          {"context_parallel_degree": cp, "cp_comm_type": comm}))

    # The other layout than the comm type's default (p2p: head-tail).
    for model, cp in (("gpt2", 2), ("gpt2", 4)) if ring else \
            (("gpt2", 2), ("llama", 2), ("gpt2", 4)):
        layout = "contiguous" if ring else "balanced"
        compare(f"{model} cp={cp} {layout}{tag}", reference[model],
                run(model, cp, f"{model}-cp{cp}-{layout}", 20,
                    {"context_parallel_degree": cp, "cp_load_balance": not ring}))

    for name in ("llama", "qwen3") if torch2 else ():
        path = os.path.join(torch2, f"{name}.keep.onnx")
        compare(f"torch 2.x {name} cp=2{tag}",
                train(trc_run, path, data, work, 1, f"hf-{name}-1", 10),
                train(trc_run, path, data, work, 2, f"hf-{name}-cp2-{comm}", 10,
                      {"context_parallel_degree": 2, "cp_comm_type": comm}))

    gpt2 = reference["gpt2"]
    # ZeRO shards over data x context: 4 shards of the optimizer state; with
    # hybrid_shard_degree 2 each data index's context ranks share one copy.
    for name, config in (("zero1", {"zero_stage": 1}),) if ring else \
            (("ddp", {}), ("zero1", {"zero_stage": 1}),
             ("zero2 hybrid", {"zero_stage": 2, "hybrid_shard_degree": 2})):
        compare(f"gpt2 cp=2 x dp=2 {name}{tag}", gpt2,
                run("gpt2", 4, f"gpt2-cp2-dp2-{name.replace(' ', '-')}", 20,
                    {"context_parallel_degree": 2, "ddp": True, **config}))

    for model in ("gpt2", "llama") if ring else ("gpt2", "gptj", "llama"):
        compare(f"{model} cp=2 x tp=2{tag}", reference[model],
                run(model, 4, f"{model}-cp2-tp2", 20,
                    {"context_parallel_degree": 2, "tensor_parallel_degree": 2}))
    for model, schedule in (("gpt2", "1f1b"),) if ring else \
            (("gpt2", "1f1b"), ("gpt2", "zb_h1"), ("llama", "1f1b")):
        compare(f"{model} cp=2 x pp=2 {schedule}{tag}", reference[model],
                run(model, 4, f"{model}-cp2-pp2-{schedule}", 20,
                    {"context_parallel_degree": 2, "pipeline_parallel_degree": 2,
                     "microbatches": 2, "pipeline_schedule": schedule}))

    # Pipeline stages under ZeRO-2: each stage's gradients reduce-scattered
    # over its data x context ranks (here the two context ranks).
    if not ring:
        compare("gpt2 cp=2 x pp=2 1f1b zero2", reference["gpt2"],
                run("gpt2", 4, "gpt2-cp2-pp2-zero2", 20,
                    {"context_parallel_degree": 2, "pipeline_parallel_degree": 2,
                     "microbatches": 2, "zero_stage": 2}))

    # Half precision: the gathers move bf16/fp16 values and the reductions
    # (MPI's, widened to f32) round once; against one rank at the same
    # precision, within bf16's resolution.
    for precision in ("bf16",) if ring else ("bf16", "fp16"):
        flags = ["--precision", precision]
        compare(f"gpt2 cp=2 {precision}{tag}",
                run("gpt2", 1, f"gpt2-1-{precision}", 20, None, flags),
                run("gpt2", 2, f"gpt2-cp2-{precision}", 20, {"context_parallel_degree": 2},
                    flags), tolerance=2e-2)

    # The optimizer state sharded over the two context ranks (ZeRO-1 without
    # data parallelism), saved logical, resumed unsharded.
    checkpoint = os.path.join(work, "ckpt-cp2")
    run("gpt2", 2, "resume-first", 10, {"context_parallel_degree": 2, "zero_stage": 1},
        ["--checkpoint-dir", checkpoint, "--checkpoint-every", "10"])
    for ranks, config, label in ((1, None, "1 rank"),) if ring else \
            ((1, None, "1 rank"), (2, {"tensor_parallel_degree": 2}, "tp=2")):
        copy = os.path.join(work, f"ckpt-cp2-to-{ranks}")
        shutil.copytree(checkpoint, copy)
        shutil.copy(os.path.join(work, f"resume-first-{comm}.jsonl"),
                    os.path.join(work, f"resumed-{ranks}.jsonl"))
        compare(f"cp=2{tag} checkpoint resumed at {label}", gpt2,
                run("gpt2", ranks, f"resumed-{ranks}", 20, config,
                    ["--checkpoint-dir", copy, "--resume"]))

    if ring:
        refused(trc_run, model_path("gpt2"), data, 2,
                '{"context_parallel_degree": 2, "cp_comm_type": "p2p"}',
                "--attention unfused: key 'cp_comm_type': 'p2p' passes blocks of fused "
                "attention around the ring", "p2p with unfused attention",
                ["--attention", "unfused"])
        refused(trc_run, model_path("gpt2"), data, 2,
                '{"context_parallel_degree": 2, "cp_comm_type": "p2p"}',
                "input 'input_ids': sequence length 18 is not divisible by 2 x context degree 2 "
                "(the head-tail split of causal load balancing)", "p2p with 18 positions",
                seq_len=18)
        return
    refused(trc_run, model_path("gpt2"), data, 3, '{"context_parallel_degree": 3}',
            "input 'input_ids': sequence length 16 is not divisible by context degree 3",
            "cp=3 with 16 positions")
    refused(trc_run, model_path("gpt2"), data, 4,
            '{"context_parallel_degree": 2, "tensor_parallel_degree": 2, '
            '"sequence_parallel": true}',
            "and 'sequence_parallel': true: both split the positions",
            "cp=2 x tp=2 sequence parallel")


if __name__ == "__main__":
    main()
