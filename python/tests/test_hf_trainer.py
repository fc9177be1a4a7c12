"""trc.hf.Trainer against transformers.Trainer: the same script, only the
Trainer class changed, for a GPT-2 language model (warm-up and linear decay,
weight decay, two epochs, evaluation every 8 steps) and a BERT sequence
classifier (padded batches of varying length, gradient accumulation,
cosine schedule, compute_metrics during training and after, predict()):
every logged training loss within 1e-4 relative (both round to 4 digits),
the learning rates, the eval losses and metrics, the predicted logits, and
the saved folder that from_pretrained loads gives trc's eval loss. Unsupported
arguments are errors naming the field."""
import os

import numpy as np
import pytest
import torch
import transformers
from transformers import TrainingArguments

import trc.hf


class Rows(torch.utils.data.Dataset):
    def __init__(self, rows):
        self.rows = rows

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


def lm_rows(seed, n):
    ids = np.random.default_rng(seed).integers(0, 128, (n, 16))
    return Rows([{"input_ids": torch.tensor(r), "labels": torch.tensor(r)} for r in ids])


def classifier_rows(seed, n):
    rng = np.random.default_rng(seed)
    return Rows([{"input_ids": torch.tensor(rng.integers(1, 128, int(rng.integers(4, 13)))),
                  "labels": torch.tensor(int(rng.integers(0, 2)))} for _ in range(n)])


def pad_batch(rows):
    """Pads each batch to its longest row (0s, attention_mask 0), as
    DataCollatorWithPadding would."""
    longest = max(len(r["input_ids"]) for r in rows)
    ids = torch.zeros(len(rows), longest, dtype=torch.long)
    mask = torch.zeros(len(rows), longest, dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r["input_ids"])] = r["input_ids"]
        mask[i, :len(r["input_ids"])] = 1
    return {"input_ids": ids, "attention_mask": mask,
            "labels": torch.stack([r["labels"] for r in rows])}


def gpt2():
    torch.manual_seed(0)
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=128, n_positions=32, n_embd=32, n_layer=2, n_head=4, resid_pdrop=0.0,
        embd_pdrop=0.0, attn_pdrop=0.0, use_cache=False))


def bert():
    torch.manual_seed(0)
    return transformers.BertForSequenceClassification(transformers.BertConfig(
        vocab_size=128, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=32, num_labels=2,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0))


def both(trainer_kwargs, tmp_path, make_model):
    """The same script with transformers.Trainer and with trc.hf.Trainer."""
    runs = {}
    for name, cls in (("hf", transformers.Trainer), ("trc", trc.hf.Trainer)):
        kwargs = dict(trainer_kwargs)
        kwargs["args"] = TrainingArguments(output_dir=str(tmp_path / name), **kwargs["args"])
        trainer = cls(model=make_model(), **kwargs)
        out = trainer.train()
        runs[name] = (trainer, out, trainer.evaluate())
    return runs


def logged(trainer, key):
    return [(h["step"], h[key]) for h in trainer.state.log_history if key in h and "step" in h]


def check_same_curves(runs):
    (hf, hf_out, hf_eval), (ours, out, ours_eval) = runs["hf"], runs["trc"]
    want, got = logged(hf, "loss"), logged(ours, "loss")
    assert [s for s, _ in got] == [s for s, _ in want] and got
    np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=1e-4)
    np.testing.assert_allclose([v for _, v in logged(ours, "learning_rate")],
                               [v for _, v in logged(hf, "learning_rate")], rtol=1e-6, atol=1e-12)
    assert out.global_step == hf_out.global_step
    assert out.training_loss == pytest.approx(hf_out.training_loss, rel=1e-4)
    assert ours_eval["eval_loss"] == pytest.approx(hf_eval["eval_loss"], rel=1e-4)
    return ours, ours_eval


def test_gpt2_language_model(tmp_path):
    runs = both(dict(train_dataset=lm_rows(0, 64), eval_dataset=lm_rows(1, 16),
                     args=dict(per_device_train_batch_size=4, learning_rate=1e-3,
                               num_train_epochs=2, logging_steps=4, warmup_steps=3,
                               weight_decay=0.01, evaluation_strategy="steps", eval_steps=8,
                               save_strategy="no", seed=1, report_to=[], use_cpu=True)),
                tmp_path, gpt2)
    ours, ours_eval = check_same_curves(runs)
    steps_evaluated = [s for s, _ in logged(ours, "eval_loss")]
    assert steps_evaluated[:4] == [8, 16, 24, 32]
    ours.save_model(str(tmp_path / "saved"))
    loaded = transformers.GPT2LMHeadModel.from_pretrained(str(tmp_path / "saved"))
    dev = torch.stack([r["input_ids"] for r in lm_rows(1, 16).rows])
    with torch.no_grad():
        loss = loaded(input_ids=dev, labels=dev).loss.item()
    assert loss == pytest.approx(ours_eval["eval_loss"], rel=1e-5)


def accuracy(prediction):
    """compute_metrics as SST-2 scripts write it."""
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


def test_bert_classifier_with_padding_and_accumulation(tmp_path):
    runs = both(dict(train_dataset=classifier_rows(0, 48), eval_dataset=classifier_rows(1, 16),
                     data_collator=pad_batch, compute_metrics=accuracy,
                     args=dict(per_device_train_batch_size=4, gradient_accumulation_steps=2,
                               learning_rate=2e-3, max_steps=6, logging_steps=2,
                               lr_scheduler_type="cosine", warmup_ratio=0.2, max_grad_norm=0.5,
                               evaluation_strategy="steps", eval_steps=3,
                               save_strategy="no", seed=3, report_to=[], use_cpu=True)),
                tmp_path, bert)
    ours, ours_eval = check_same_curves(runs)
    hf, _, hf_eval = runs["hf"]
    # compute_metrics at every evaluation, during training and after.
    assert [s for s, _ in logged(ours, "eval_accuracy")] == [3, 6, 6]
    assert logged(ours, "eval_accuracy") == logged(hf, "eval_accuracy")
    assert ours_eval["eval_accuracy"] == hf_eval["eval_accuracy"]
    # predict(): the same logits, label_ids and test_ metrics as transformers'.
    test = classifier_rows(2, 12)
    want, got = hf.predict(test), ours.predict(test)
    np.testing.assert_allclose(got.predictions, want.predictions, rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(got.label_ids, want.label_ids)
    assert got.metrics["test_loss"] == pytest.approx(want.metrics["test_loss"], rel=1e-4)
    assert got.metrics["test_accuracy"] == want.metrics["test_accuracy"]


def test_epoch_strategies(tmp_path):
    # Logging, evaluation and saving at the end of each epoch (6 steps each).
    runs = both(dict(train_dataset=classifier_rows(4, 24), eval_dataset=classifier_rows(5, 8),
                     data_collator=pad_batch, compute_metrics=accuracy,
                     args=dict(per_device_train_batch_size=4, learning_rate=2e-3,
                               num_train_epochs=2, logging_strategy="epoch",
                               evaluation_strategy="epoch", save_strategy="epoch",
                               dataloader_drop_last=True, seed=5, report_to=[], use_cpu=True)),
                tmp_path, bert)
    ours, _ = check_same_curves(runs)
    hf = runs["hf"][0]
    assert [s for s, _ in logged(ours, "loss")] == [6, 12]
    assert logged(ours, "eval_accuracy") == logged(hf, "eval_accuracy")
    assert [s for s, _ in logged(ours, "eval_loss")][:2] == [6, 12]
    assert os.path.isdir(tmp_path / "trc" / "trc-checkpoints" / "step-6")


def test_unsupported_arguments_are_named(tmp_path):
    args = TrainingArguments(output_dir=str(tmp_path), label_smoothing_factor=0.1, report_to=[])
    with pytest.raises(ValueError, match="label_smoothing_factor"):
        trc.hf.Trainer(model=gpt2(), args=args, train_dataset=lm_rows(0, 8))
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[])
    with pytest.raises(ValueError, match="model_init"):
        trc.hf.Trainer(model=gpt2(), args=args, train_dataset=lm_rows(0, 8),
                       model_init=gpt2)
    args = TrainingArguments(output_dir=str(tmp_path), optim="sgd", report_to=[])
    with pytest.raises(ValueError, match="optim"):
        trc.hf.Trainer(model=gpt2(), args=args, train_dataset=lm_rows(0, 8))
