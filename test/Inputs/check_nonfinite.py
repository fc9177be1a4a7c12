"""Checks trc-run's non-finite guard (--on-nonfinite stop|skip).

    python check_nonfinite.py TRC_RUN MODELS_DIR WORK [--mpi]

* diverging: SGD at lr 1e4 goes non-finite after a few steps; the run stops
  with exit 1 and one `error:` line naming the first step whose loss is null
  (non-finite) in the metrics; `latest` names a checkpoint of an earlier
  step whose tensors are all finite, and no checkpoint of a later step
  exists;
* overflowing update: SGD at lr 3e38 makes the parameters inf at step 1
  while its loss and gradient norm are finite: the checkpoint is refused
  (error naming the step and a tensor), no `latest` is written;
* skip: a batch whose targets are all --ignore-index (a NaN loss: the mean
  over no tokens) is skipped under --on-nonfinite skip: exit 0, the skipped
  steps say "skipped": 1, the checkpoint of a skipped step holds exactly the
  parameters and optimizer state of the step before it (AdamW), the run's
  final tensors are finite and its last losses finite;
* skip limit: the diverging run under --on-nonfinite skip stops at the 10th
  non-finite step in a row;
* --mpi: the diverging run on 2 data-parallel ranks and on 2 pipeline stages
  ends every rank with exit 1 and one `error:` line for the job.
Prints one line per check; "FAIL: ..." and exit 1 on the first failure.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpi_training import ENV, fail, mpirun  # noqa: E402

TEXT = "to be or not to be, that is the question. "


def run(trc_run, model, work, name, data, extra=(), ranks=1, steps=8):
    """Trains batch 2 x 16 tokens; returns (exit status, output, metrics)."""
    metrics = os.path.join(work, name + ".jsonl")
    if os.path.exists(metrics):
        os.remove(metrics)
    command = mpirun(ranks) + [trc_run, model, "--device", "cpu", "--data", data,
                               "--batch-size", "4" if ranks > 1 else "2", "--seq-len", "16",
                               "--steps", str(steps), "--metrics", metrics, *extra]
    done = subprocess.run(command, env=ENV, capture_output=True, text=True)
    lines = []
    if os.path.exists(metrics):
        with open(metrics) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    return done.returncode, done.stdout + done.stderr, lines


def errors(output):
    return [line for line in output.splitlines() if line.startswith("error:")]


def read_tensors(folder):
    from safetensors.numpy import load_file
    return load_file(os.path.join(folder, "tensors.safetensors"))


def latest(ckpt):
    with open(os.path.join(ckpt, "latest")) as f:
        return os.path.join(ckpt, f.read().strip())


def steps_saved(ckpt):
    if not os.path.isdir(ckpt):
        return []
    return sorted(int(d[len("step-"):]) for d in os.listdir(ckpt) if d.startswith("step-"))


def all_finite(tensors):
    return all(np.isfinite(t).all() for t in tensors.values()
               if np.issubdtype(t.dtype, np.floating))


def first_bad_step(name, lines):
    bad = [m["step"] for m in lines if m["loss"] is None or m["grad_norm"] is None]
    if not bad:
        fail(f"{name}: no step went non-finite: {lines}")
    return bad[0]


def expect_stop(name, status, output, lines, step, message):
    if status == 0:
        fail(f"{name}: exit 0\n{output}")
    found = errors(output)
    want = f"error: step {step}: {message}"
    if len(found) != 1 or not found[0].startswith(want):
        fail(f"{name}: expected one line starting '{want}', got {found}\n{output}")
    if lines and lines[-1]["step"] != step:
        fail(f"{name}: the metrics go on past step {step}: {lines[-1]}")
    return found[0]


def diverging(trc_run, models, work, data):
    name = "diverging"
    ckpt = os.path.join(work, "ckpt-diverging")
    shutil.rmtree(ckpt, ignore_errors=True)
    status, output, lines = run(trc_run, os.path.join(models, "gpt2_op17_dyn.onnx"), work, name,
                                data, ["--optimizer", "sgd", "--lr", "1e4", "--checkpoint-dir",
                                       ckpt, "--checkpoint-every", "1"])
    bad = first_bad_step(name, lines)
    line = expect_stop(name, status, output, lines, bad, "the loss is nan")
    if "stopping (--on-nonfinite skip skips such steps)" not in line:
        fail(f"{name}: {line}")
    good = latest(ckpt)
    with open(os.path.join(good, "state.json")) as f:
        saved = json.load(f)["step"]
    if saved >= bad or max(steps_saved(ckpt)) >= bad:
        fail(f"{name}: checkpoints {steps_saved(ckpt)} (latest {saved}) at or past step {bad}")
    if not good.endswith(f"step-{bad - 1}") or good not in line:
        fail(f"{name}: latest is {good}, not the step before {bad}, or unnamed: {line}")
    if not all_finite(read_tensors(good)):
        fail(f"{name}: {good} holds non-finite values")
    print(f"{name}: stopped at step {bad} (exit {status}), latest step-{saved} finite")
    return bad


def overflowing_update(trc_run, models, work, data):
    name = "overflowing update"
    ckpt = os.path.join(work, "ckpt-overflow")
    shutil.rmtree(ckpt, ignore_errors=True)
    status, output, lines = run(trc_run, os.path.join(models, "gpt2_op17_dyn.onnx"), work,
                                "overflow", data, ["--optimizer", "sgd", "--lr", "3e38",
                                                   "--checkpoint-dir", ckpt,
                                                   "--checkpoint-every", "1"])
    if lines[0]["loss"] is None:
        fail(f"{name}: step 1's loss is already non-finite")
    expect_stop(name, status, output, lines, 1, "'")
    if "holds inf or NaN after the update; not checkpointed" not in output:
        fail(f"{name}: {errors(output)}")
    if os.path.exists(os.path.join(ckpt, "latest")) or steps_saved(ckpt):
        fail(f"{name}: a checkpoint was written: {steps_saved(ckpt)}")
    print(f"{name}: step 1 not checkpointed (exit {status})")


def skip(trc_run, models, work):
    name = "skip"
    # Batch 3's targets (tokens 97..128, batch 2 x 16) are all spaces.
    data = os.path.join(work, "gap.txt")
    with open(data, "w") as f:
        f.write(TEXT * 2 + " " * 60 + TEXT * 20)
    ckpt = os.path.join(work, "ckpt-skip")
    shutil.rmtree(ckpt, ignore_errors=True)
    status, output, lines = run(trc_run, os.path.join(models, "gpt2_op17_logits_dyn.onnx"), work,
                                name, data, ["--loss", "cross_entropy", "--ignore-index", "32",
                                             "--on-nonfinite", "skip", "--checkpoint-dir", ckpt,
                                             "--checkpoint-every", "1"])
    if status != 0:
        fail(f"{name}: exit {status}\n{output}")
    skipped = [m["step"] for m in lines if m["skipped"]]
    if not skipped or any(lines[s - 1]["loss"] is not None for s in skipped):
        fail(f"{name}: skipped steps {skipped}: {lines}")
    if len(skipped) == len(lines) or any(m["loss"] is None for m in lines if not m["skipped"]):
        fail(f"{name}: {lines}")
    for step in skipped:
        if f"trc-run: step {step}: the loss is nan" not in output:
            fail(f"{name}: no line says step {step} was skipped\n{output}")
        before = read_tensors(os.path.join(ckpt, f"step-{step - 1}"))
        after = read_tensors(os.path.join(ckpt, f"step-{step}"))
        if before.keys() != after.keys() or any(
                not np.array_equal(before[k], after[k]) for k in before):
            fail(f"{name}: step {step}'s update was applied (the checkpoint changed)")
    final = read_tensors(latest(ckpt))
    if not all_finite(final) or lines[-1]["loss"] is None:
        fail(f"{name}: the final state or loss is not finite")
    print(f"{name}: steps {skipped} skipped, state unchanged by them; {len(lines)} steps, "
          f"exit 0, final parameters finite")


def skip_limit(trc_run, models, work, data):
    name = "skip limit"
    status, output, lines = run(trc_run, os.path.join(models, "gpt2_op17_dyn.onnx"), work,
                                "skip-limit", data, ["--optimizer", "sgd", "--lr", "1e4",
                                                     "--on-nonfinite", "skip"], steps=30)
    bad = first_bad_step(name, lines)
    line = expect_stop(name, status, output, lines, bad + 9, "the loss is nan")
    if "the 10th non-finite step in a row" not in line:
        fail(f"{name}: {line}")
    print(f"{name}: steps {bad}-{bad + 9} non-finite, stopped at step {bad + 9}")


def ranks(trc_run, models, work, data, name, config):
    ckpt = os.path.join(work, "ckpt-" + name.replace(" ", "-"))
    shutil.rmtree(ckpt, ignore_errors=True)
    extra = ["--optimizer", "sgd", "--lr", "1e4"]
    if config:
        extra += ["--config", json.dumps(config)]
    else:
        extra += ["--checkpoint-dir", ckpt, "--checkpoint-every", "2"]
    status, output, lines = run(trc_run, os.path.join(models, "gpt2_op17_dyn.onnx"), work,
                                name.replace(" ", "-"), data, extra, ranks=2)
    bad = first_bad_step(name, lines)
    expect_stop(name, status, output, lines, bad, "the loss is nan")
    if not config and (latest(ckpt) != os.path.join(ckpt, f"step-{(bad - 1) // 2 * 2}")
                       or not all_finite(read_tensors(latest(ckpt)))):
        fail(f"{name}: latest is {latest(ckpt)}")
    print(f"{name}: every rank stopped at step {bad}, one error line (exit {status})")


def main():
    trc_run, models, work = sys.argv[1:4]
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, "data.txt")
    with open(data, "w") as f:
        f.write(TEXT * 40)
    if "--mpi" in sys.argv[4:]:
        ranks(trc_run, models, work, data, "2 ranks ddp", None)
        ranks(trc_run, models, work, data, "2 pipeline stages",
              {"pipeline_parallel_degree": 2, "microbatches": 2})
        return
    diverging(trc_run, models, work, data)
    overflowing_update(trc_run, models, work, data)
    skip(trc_run, models, work)
    skip_limit(trc_run, models, work, data)


if __name__ == "__main__":
    main()
