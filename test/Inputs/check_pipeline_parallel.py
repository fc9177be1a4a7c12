#!/usr/bin/env python3
"""Pipeline-parallel training checks of trc-run under mpirun, for
test/Training/pipeline-parallel.test.

  check_pipeline_parallel.py TRC_RUN MODELS_DIR DATA WORKDIR

With the same global batch (4 rows of 16 tokens, AdamW, 20 steps), against
each model's 1-rank run (losses within 1e-5 relative):
  * GPT-2 (tied embeddings: the first and last stage both hold wte) at 2
    stages with GPipe (`pipeline: simple`), 1F1B and 4 microbatches, ZB-H1
    (the weight gradients deferred), at 4 stages with 1F1B, ZB-H1 and
    GPipe, and at 2 and 4 ranks x 2 chunks with interleaved 1F1B;
  * GPT-2 at 2 stages x 2 data ranks (each stage's gradients averaged over
    its data ranks);
  * GPT-2 at 2 stages with --grad-accum 2 (2 x 2 microbatches per step);
  * GPT-2 and Llama at 2 stages x tensor degree 2 (4 ranks), GPT-2 also with
    sequence parallelism, ZB-H1 and clipping;
  * GPT-2 with global-norm clipping at 2 stages and at 2 ranks x 2 chunks
    (the norm sums every stage of every rank);
  * BERT, GPT-J and Llama-style exports at 2 stages with 1F1B;
  * a GPT-2 checkpoint written at step 10 by 2 stages resumes on 1 rank and
    at 4 stages and continues the 1-rank curve;
  * bf16 at 2 stages x 2 microbatches equals one rank with --grad-accum 2;
    --export-onnx after 2 stages writes the weights one rank trains;
  * killing rank 1 (a stage) mid-training ends the job within 60 s with an
    error naming rank 1;
  * refused with an error naming the key: more stages than layer boundaries,
    microbatches that do not divide the batch, an unknown schedule,
    pipeline x ZeRO-3 (ZeRO-1: pipeline-zero.test).
Prints what it compared; exits 1 with the reason when a check fails.
"""
import os
import shutil
import sys

import numpy
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import compare, fail, killed_rank, refused, train  # noqa: E402


def exported_weights(trc_run, model, data, work):
    """--export-onnx after 2 stages holds every stage's trained weights: those
    of one rank with --grad-accum 2 (SGD, which does not amplify rounding
    noise the way Adam's normalization does), and not the initial ones."""
    def weights(path):
        return {i.name: numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer}

    sgd = ["--optimizer", "sgd", "--lr", "0.1"]
    one, staged = os.path.join(work, "one.onnx"), os.path.join(work, "staged.onnx")
    train(trc_run, model, data, work, 1, "export-1", 5, None,
          sgd + ["--grad-accum", "2", "--export-onnx", one])
    train(trc_run, model, data, work, 2, "export-pp2", 5,
          {"pipeline_parallel_degree": 2, "microbatches": 2}, sgd + ["--export-onnx", staged])
    a, b, initial = weights(one), weights(staged), weights(model)
    worst = max(float(numpy.max(numpy.abs(a[k] - b[k]))) for k in a)
    moved = sum(1 for k in a if not numpy.array_equal(b[k], initial[k]))
    print(f"export after 2 stages: {len(b)} initializers, {moved} trained, largest difference "
          f"from 1 rank {worst:.1e}")
    if worst > 1e-5 or moved < len(a) // 2:
        fail("the 2-stage export does not hold the trained weights")


def main():
    if len(sys.argv) != 5:
        fail(__doc__)
    trc_run, models, data, work = sys.argv[1:]
    if shutil.which("mpirun") is None:
        print("SKIPPED: mpirun is not installed")
        return
    os.makedirs(work, exist_ok=True)

    def model_path(model):
        return os.path.join(models, f"{model}_op17_dyn.onnx")

    def run(model, ranks, name, config=None, extra=()):
        return train(trc_run, model_path(model), data, work, ranks, name, 20, config, extra)

    gpt2 = run("gpt2", 1, "gpt2-1")
    for label, ranks, config in (
            ("2 stages gpipe", 2, {"pipeline_parallel_degree": 2, "microbatches": 2,
                                   "pipeline": "simple"}),
            ("2 stages 1f1b, 4 microbatches", 2, {"partitions": 2, "microbatches": 4,
                                                  "pipeline_schedule": "1f1b"}),
            ("4 stages 1f1b", 4, {"pipeline_parallel_degree": 4, "microbatches": 4}),
            ("2 stages zb_h1", 2, {"pipeline_parallel_degree": 2, "microbatches": 4,
                                   "pipeline_schedule": "zb_h1"}),
            ("4 stages zb_h1", 4, {"pipeline_parallel_degree": 4, "microbatches": 4,
                                   "pipeline_schedule": "zb_h1"}),
            ("4 stages gpipe", 4, {"pipeline_parallel_degree": 4, "microbatches": 4,
                                   "pipeline": "simple"}),
            ("2 ranks x 2 chunks interleaved 1f1b", 2,
             {"pipeline_parallel_degree": 2, "microbatches": 2,
              "pipeline_schedule": "interleaved_1f1b", "virtual_stages": 2}),
            ("4 ranks x 2 chunks interleaved 1f1b", 4,
             {"pipeline_parallel_degree": 4, "microbatches": 4,
              "pipeline_schedule": "interleaved_1f1b", "virtual_stages": 2})):
        compare(f"gpt2 {label}", gpt2, run("gpt2", ranks, "gpt2-" + label.replace(" ", "-"),
                                           config))
    compare("gpt2 2 stages x 2 data ranks", gpt2,
            run("gpt2", 4, "gpt2-pp2-dp2", {"pipeline_parallel_degree": 2, "microbatches": 2,
                                            "ddp": True}))
    compare("gpt2 2 stages x tensor 2", gpt2,
            run("gpt2", 4, "gpt2-pp2-tp2", {"pipeline_parallel_degree": 2, "microbatches": 2,
                                            "tensor_parallel_degree": 2}))
    # --grad-accum over stages is more microbatches per step: the same sums.
    compare("gpt2 2 stages with --grad-accum 2", gpt2,
            run("gpt2", 2, "gpt2-pp2-accum", {"pipeline_parallel_degree": 2, "microbatches": 2},
                ["--grad-accum", "2"]))
    clip = ["--clip-grad-norm", "0.5"]
    clipped = run("gpt2", 1, "gpt2-1-clip", extra=clip)
    compare("gpt2 2 stages clipped", clipped,
            run("gpt2", 2, "gpt2-pp2-clip", {"pipeline_parallel_degree": 2, "microbatches": 2},
                clip))
    # The norm sums every chunk of every rank (2 apply programs per rank).
    compare("gpt2 2 ranks x 2 chunks clipped", clipped,
            run("gpt2", 2, "gpt2-interleaved-clip",
                {"pipeline_parallel_degree": 2, "microbatches": 2,
                 "pipeline_schedule": "interleaved_1f1b", "virtual_stages": 2}, clip))
    compare("gpt2 2 stages x tensor 2 sequence parallel zb_h1 clipped", clipped,
            run("gpt2", 4, "gpt2-pp2-tp2-sp-zb-clip",
                {"pipeline_parallel_degree": 2, "microbatches": 2, "tensor_parallel_degree": 2,
                 "sequence_parallel": True, "pipeline_schedule": "zb_h1"}, clip))
    for model in ("bert", "gptj", "llama"):
        alone = run(model, 1, f"{model}-1")
        compare(f"{model} 2 stages 1f1b", alone,
                run(model, 2, f"{model}-pp2", {"pipeline_parallel_degree": 2,
                                               "microbatches": 2}))
    compare("llama 2 stages x tensor 2", alone,
            run("llama", 4, "llama-pp2-tp2", {"pipeline_parallel_degree": 2, "microbatches": 2,
                                              "tensor_parallel_degree": 2}))

    # Logical checkpoints: 2 stages write step 10; 1 rank and 4 stages
    # continue to step 20 from copies of it, on the 1-rank curve.
    checkpoint = os.path.join(work, "ckpt-pp2")
    train(trc_run, model_path("gpt2"), data, work, 2, "resume-first", 10,
          {"pipeline_parallel_degree": 2, "microbatches": 2},
          ["--checkpoint-dir", checkpoint, "--checkpoint-every", "10"])
    for ranks, config, label in ((1, None, "1 rank"),
                                 (4, {"pipeline_parallel_degree": 4, "microbatches": 4},
                                  "4 stages")):
        copy = os.path.join(work, f"ckpt-pp2-to-{ranks}")
        shutil.copytree(checkpoint, copy)
        shutil.copy(os.path.join(work, "resume-first.jsonl"),
                    os.path.join(work, f"resumed-{ranks}.jsonl"))
        compare(f"2-stage checkpoint resumed at {label}", gpt2,
                run("gpt2", ranks, f"resumed-{ranks}", config,
                    ["--checkpoint-dir", copy, "--resume"]))

    # bf16 at 2 stages x 2 microbatches is one rank's --grad-accum 2 exactly,
    # on as many threads per rank: one process's losses on 1 and on 2
    # threads differ (1e-7 relative in fp32 at step 2, 2.6e-4 in bf16 at
    # step 3: some parallel loop reduces in a thread-count-dependent order).
    bf16 = ["--precision", "bf16"]
    accumulated = train(trc_run, model_path("gpt2"), data, work, 1, "gpt2-bf16-accum", 20,
                        extra=bf16 + ["--grad-accum", "2"], threads=1)
    compare("gpt2 bf16 2 stages", accumulated,
            train(trc_run, model_path("gpt2"), data, work, 2, "gpt2-bf16-pp2", 20,
                  {"pipeline_parallel_degree": 2, "microbatches": 2}, bf16, threads=1),
            tolerance=1e-7)
    exported_weights(trc_run, model_path("gpt2"), data, work)

    gpt2_model = model_path("gpt2")
    # A lost stage: rank 1 (the last stage) killed mid-training ends rank 0,
    # which waits for its gradients, within 60 s naming it.
    killed_rank(trc_run, gpt2_model, data, work, 2,
                {"pipeline_parallel_degree": 2, "microbatches": 2}, "killed stage")
    refused(trc_run, gpt2_model, data, 2,
            '{"pipeline_parallel_degree": 2, "virtual_stages": 64, '
            '"pipeline_schedule": "interleaved_1f1b", "microbatches": 2}',
            "cannot cut @main into 128 stages", "128 stages")
    refused(trc_run, gpt2_model, data, 2, '{"pipeline_parallel_degree": 2, "microbatches": 3}',
            "'microbatches'", "3 microbatches of a batch of 4")
    refused(trc_run, gpt2_model, data, 2,
            '{"pipeline_parallel_degree": 2, "pipeline_schedule": "dualpipe"}',
            "pipeline_schedule", "unknown schedule")


if __name__ == "__main__":
    main()
