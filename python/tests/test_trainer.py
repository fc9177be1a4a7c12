"""The Python package end to end: a torch module exported with trc.export,
trained by trc.Trainer, against the same AdamW steps in PyTorch (per-step
losses, final weights), the trained weights back into the module with
load_state_dict (its held-out loss = trc's evaluate()), trc-run given the
same flags (bit-identical losses: one code path), errors, callbacks, and a
2-rank job under mpirun. Run by ctest (python/CMakeLists.txt: PYTHONPATH
and TRC_RUN set)."""
import json
import os
import shutil
import subprocess
import sys
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import torch.nn as nn

import trc

VOCAB, WIDTH, SEQ, BATCH, STEPS, LR = 64, 16, 8, 4, 8, 0.01


class TinyLM(nn.Module):
    """(input_ids, labels) -> next-token cross-entropy; an embedding, a layer
    norm, a tanh layer and a head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.norm = nn.LayerNorm(WIDTH)
        self.hidden = nn.Linear(WIDTH, WIDTH)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, input_ids, labels):
        logits = self.head(torch.tanh(self.hidden(self.norm(self.embed(input_ids)))))
        return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1))


def rows(seed, n):
    ids = np.random.default_rng(seed).integers(0, VOCAB, (n, SEQ)).astype(np.int64)
    return {"input_ids": ids, "labels": np.roll(ids, -1, axis=1)}


def example(data):
    return {k: torch.from_numpy(v[:2]) for k, v in data.items()}


def torch_losses(model, data, steps):
    """AdamW (weight decay 0) over the batches trc takes without shuffling:
    rows [s*B, (s+1)*B) at step s."""
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=0.0)
    losses = []
    for s in range(steps):
        batch = {k: torch.from_numpy(v[s * BATCH:(s + 1) * BATCH]) for k, v in data.items()}
        loss = model(**batch)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


OPTIONS = dict(batch_size=BATCH, steps=STEPS, lr=LR, optimizer="adamw", weight_decay=0.0,
               device="cpu")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    torch.manual_seed(0)
    model = TinyLM()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    data, held = rows(1, BATCH * STEPS), rows(2, 8)
    out = tmp_path_factory.mktemp("trained")
    trainer = trc.Trainer(model, data, eval_data=held, example_inputs=example(data),
                          output_dir=out, **OPTIONS)
    seen = []
    result = trainer.train(on_step=seen.append)
    return SimpleNamespace(model=model, start=start, data=data, held=held, out=out,
                           trainer=trainer, result=result, seen=seen)


def test_losses_and_weights_match_pytorch(run):
    reference = TinyLM()
    reference.load_state_dict(run.start)
    expected = torch_losses(reference, run.data, STEPS)
    got = [s["loss"] for s in run.result.steps]
    assert len(got) == STEPS and run.result.global_step == STEPS
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    trained = run.trainer.state_dict()
    for name, value in reference.state_dict().items():
        np.testing.assert_allclose(trained[name].numpy(), value.numpy(), rtol=1e-4, atol=1e-5,
                                   err_msg=name)


def test_state_dict_loads_into_the_module(run):
    state = run.trainer.state_dict()
    assert set(state) == set(run.model.state_dict())
    module = TinyLM()
    module.load_state_dict(state, strict=True)
    with torch.no_grad():
        held_loss = module(**{k: torch.from_numpy(v) for k, v in run.held.items()}).item()
    assert run.result.metrics["eval_loss"] == pytest.approx(held_loss, rel=1e-5)
    assert run.trainer.evaluate()["eval_loss"] == pytest.approx(held_loss, rel=1e-5)
    saved = run.trainer.save_model(run.out / "copy")
    assert os.path.exists(os.path.join(saved, "model.safetensors"))


def test_callbacks_and_history(run):
    assert run.seen == run.result.steps == run.trainer.log_history
    assert all(s["applied"] for s in run.seen)
    assert run.result.training_loss == pytest.approx(np.mean([s["loss"] for s in run.seen]))


def test_trc_run_with_the_same_flags_gives_the_same_losses(run, tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    cmd = [os.environ["TRC_RUN"], str(run.out / "model.onnx"), "--data", str(run.out / "train.npz"),
           "--batch-size", str(BATCH), "--steps", str(STEPS), "--lr", str(LR), "--optimizer", "adamw",
           "--weight-decay", "0", "--device", "cpu", "--metrics", str(metrics)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    losses = [json.loads(line)["loss"] for line in metrics.read_text().splitlines()]
    assert losses == [s["loss"] for s in run.result.steps]


def test_compile_then_train_the_compiled_step(run, tmp_path):
    # Saved steps train token data: a byte file whose bytes are ids < VOCAB.
    text = tmp_path / "tokens.txt"
    text.write_bytes(bytes(np.random.default_rng(3).integers(32, VOCAB, 2000).tolist()))
    options = dict(OPTIONS, seq_len=SEQ)
    step = trc.compile(run.out / "model.onnx", text, output=tmp_path / "step", **options)
    assert os.path.isdir(step.path)
    saved = trc.Trainer(step, text, output_dir=tmp_path / "a", **options).train()
    direct = trc.Trainer(run.out / "model.onnx", text, output_dir=tmp_path / "b", **options).train()
    assert len(saved.steps) == STEPS
    assert [s["loss"] for s in saved.steps] == [s["loss"] for s in direct.steps]


class TinyLMWithLogits(TinyLM):
    """TinyLM returning (loss, logits), as Hugging Face models do."""

    def forward(self, input_ids, labels):
        logits = self.head(torch.tanh(self.hidden(self.norm(self.embed(input_ids)))))
        return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), labels.reshape(-1)), logits


def test_predict_gives_the_trained_modules_logits(run, tmp_path):
    torch.manual_seed(0)
    model = TinyLMWithLogits()
    trainer = trc.Trainer(model, run.data, example_inputs=example(run.data), export_logits=True,
                          output_dir=tmp_path, **dict(OPTIONS, steps=4))
    own = trainer.predict(run.held)          # before train(): the module's own parameters
    with torch.no_grad():
        held = {k: torch.from_numpy(v) for k, v in run.held.items()}
        loss, logits = model(**held)
    assert own.step == 0 and list(own.outputs) == ["logits"]
    np.testing.assert_allclose(own.predictions, logits.numpy(), rtol=1e-4, atol=1e-5)
    trainer.train()
    model.load_state_dict(trainer.state_dict())
    with torch.no_grad():
        loss, logits = model(**held)
    trained = trainer.predict(run.held)
    assert trained.step == 4 and trained.predictions.shape == (8, SEQ, VOCAB)
    np.testing.assert_allclose(trained.predictions, logits.numpy(), rtol=1e-4, atol=1e-5)
    assert trained.metrics["eval_loss"] == pytest.approx(loss.item(), rel=1e-5)
    accuracy = (logits.argmax(-1) == held["labels"]).float().mean().item()
    assert trained.metrics["eval_accuracy"] == pytest.approx(accuracy)


def test_predict_exports_the_logits_of_a_module_trained_without_them(run, tmp_path):
    torch.manual_seed(0)
    model = TinyLMWithLogits()
    trainer = trc.Trainer(model, run.data, example_inputs=example(run.data), output_dir=tmp_path,
                          **dict(OPTIONS, steps=3))
    trainer.train()
    model.load_state_dict(trainer.state_dict())
    with torch.no_grad():
        _, logits = model(**{k: torch.from_numpy(v) for k, v in run.held.items()})
    got = trainer.predict(run.held)
    assert got.step == 3
    np.testing.assert_allclose(got.predictions, logits.numpy(), rtol=1e-4, atol=1e-5)


def test_predict_without_per_row_outputs_says_so(run, tmp_path):
    trainer = trc.Trainer(run.out / "model.onnx", output_dir=tmp_path, **OPTIONS)
    with pytest.raises(trc.Error, match="no output with one value per row"):
        trainer.predict(run.held)


def test_unknown_keyword_is_a_type_error(run):
    with pytest.raises(TypeError, match="'learning_rate'.*--learning-rate"):
        trc.Trainer(run.out / "model.onnx", run.out / "train.npz", learning_rate=0.1)


def test_bad_value_names_the_flag(run, tmp_path):
    trainer = trc.Trainer(run.out / "model.onnx", run.out / "train.npz", output_dir=tmp_path,
                          **dict(OPTIONS, lr=-1))
    with pytest.raises(trc.Error, match="option '--lr' expects a positive number"):
        trainer.train()


def test_missing_data_names_the_file(run, tmp_path):
    trainer = trc.Trainer(run.out / "model.onnx", tmp_path / "absent.npz", output_dir=tmp_path,
                          **OPTIONS)
    with pytest.raises(trc.Error, match="absent.npz"):
        trainer.train()


def test_a_callback_that_raises_stops_the_run(run, tmp_path):
    class Enough(Exception):
        pass

    def stop_at_3(step):
        if step["step"] == 3:
            raise Enough()

    trainer = trc.Trainer(run.out / "model.onnx", run.out / "train.npz", output_dir=tmp_path,
                          callbacks=[stop_at_3], **dict(OPTIONS, steps=20))
    with pytest.raises(Enough):
        trainer.train()
    assert [s["step"] for s in trainer.log_history] == [1, 2, 3]


RANK_SCRIPT = textwrap.dedent("""
    import json, sys
    import trc
    out, model, data, ranks = sys.argv[1:5]
    trainer = trc.Trainer(model, data, output_dir=out, batch_size=4, steps=8, lr=0.01,
                          optimizer="adamw", weight_decay=0.0, device="cpu")
    losses = [s["loss"] for s in trainer.train().steps]
    print("LOSSES " + json.dumps(losses))
""")


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun: the 2-rank job is skipped")
def test_two_ranks_under_mpirun(run, tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(RANK_SCRIPT)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")
    done = subprocess.run(["mpirun", "--oversubscribe", "-np", "2", sys.executable, str(script),
                           str(tmp_path / "out"), str(run.out / "model.onnx"),
                           str(run.out / "train.npz"), "2"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line[7:]) for line in done.stdout.splitlines() if line.startswith("LOSSES ")]
    assert len(lines) == 2   # every rank's process trained and saw every step
    for losses in lines:
        np.testing.assert_allclose(losses, [s["loss"] for s in run.result.steps], rtol=1e-5)
