#!/usr/bin/env python3
"""A Hugging Face Trainer script for GLUE SST-2 (SageMaker Training
Compiler's showcase: GPT-2 fine-tuned on SST-2), as a user writes it. The
one line that differs between transformers and trc is the Trainer import:

    python bench/sst2_hf_trainer.py --trainer hf  OUT   # from transformers import Trainer
    python bench/sst2_hf_trainer.py --trainer trc OUT   # from trc.hf import Trainer

The model is a small GPT-2 sequence classifier (GPT2ForSequenceClassification:
2 layers, width 64, 4 heads, dropout 0.1) trained from scratch, since no
pretrained weights can be fetched here; the tokenizer is
scripts/prepare_sst2.py's byte-level BPE (4096 entries, trained on the train
split), rows of 64 tokens padded with 0. One epoch, AdamW 1e-3 with
warm-up and linear decay, weight decay 0.01, batch 32, seed 1, PyTorch on
every core (--threads; trc uses every core a rank has). The script's
compute_metrics gives the dev accuracy of trainer.evaluate(); after
training the saved folder is also loaded back with from_pretrained and the
dev accuracy computed in PyTorch (the same code for both Trainers). Prints
one JSON line: train_loss, train_runtime, samples/s, evaluate()'s loss and
accuracy, and the reloaded model's.
Precondition: ../shared/data/sst2 (or --data), the project's .venv.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import transformers

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import prepare_sst2  # noqa: E402

SEQ, VOCAB = 64, 4096


class Rows(torch.utils.data.Dataset):
    def __init__(self, ids, labels):
        self.ids, self.labels = torch.from_numpy(ids), torch.from_numpy(labels)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        ids = self.ids[i]
        return {"input_ids": ids, "attention_mask": (ids != 0).long(), "labels": self.labels[i]}


def load(data):
    labels, sentences = prepare_sst2.read_split(os.path.join(data, "train.tsv"))
    tok = prepare_sst2.train_tokenizer(sentences, VOCAB)
    splits = {}
    for name in ("train", "dev"):
        labels, sentences = prepare_sst2.read_split(os.path.join(data, f"{name}.tsv"))
        ids, labels, _ = prepare_sst2.rows(tok, labels, sentences, SEQ)
        splits[name] = Rows(ids, labels)
    return splits


def compute_metrics(prediction):
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--trainer", choices=["hf", "trc"], required=True)
    p.add_argument("out")
    p.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                  "data", "sst2"))
    p.add_argument("--max-steps", type=int, default=-1)
    p.add_argument("--threads", type=int, default=os.cpu_count(),
                   help="PyTorch's threads (default: every core, as trc uses)")
    a = p.parse_args()
    # Debian's torch starts with one OpenMP thread here (omp_get_max_threads
    # is 1); trc takes every core a rank has: the same cores for both.
    torch.set_num_threads(a.threads)
    if a.trainer == "trc":
        from trc.hf import Trainer
    else:
        from transformers import Trainer

    splits = load(a.data)
    torch.manual_seed(1)
    config = transformers.GPT2Config(vocab_size=VOCAB, n_positions=SEQ, n_embd=64, n_layer=2,
                                     n_head=4, num_labels=2, pad_token_id=0, use_cache=False)
    model = transformers.GPT2ForSequenceClassification(config)
    args = transformers.TrainingArguments(
        output_dir=a.out, per_device_train_batch_size=32, per_device_eval_batch_size=32,
        learning_rate=1e-3, weight_decay=0.01, warmup_ratio=0.05, num_train_epochs=1,
        max_steps=a.max_steps, logging_steps=100, save_strategy="no", seed=1,
        dataloader_drop_last=True, report_to=[], use_cpu=True)
    trainer = Trainer(model=model, args=args, train_dataset=splits["train"],
                      eval_dataset=splits["dev"], compute_metrics=compute_metrics)
    start = time.time()
    out = trainer.train()
    wall = time.time() - start
    evaluated = trainer.evaluate()
    trainer.save_model(os.path.join(a.out, "model"))

    # The saved model, loaded back: dev loss and accuracy in PyTorch.
    loaded = transformers.GPT2ForSequenceClassification.from_pretrained(os.path.join(a.out, "model"))
    loaded.eval()
    dev = splits["dev"]
    with torch.no_grad():
        batch = {k: torch.stack([dev[i][k] for i in range(len(dev))]) for k in dev[0]}
        result = loaded(**batch)
    accuracy = (result.logits.argmax(-1) == batch["labels"]).float().mean().item()
    print(json.dumps({"trainer": a.trainer, "steps": out.global_step,
                      "train_loss": round(out.training_loss, 4), "train_wall_s": round(wall, 1),
                      "samples_per_s": round(out.global_step * 32 / wall, 1),
                      "eval_loss": round(evaluated["eval_loss"], 4),
                      "eval_accuracy": round(evaluated["eval_accuracy"], 4),
                      "dev_loss": round(result.loss.item(), 4), "dev_accuracy": round(accuracy, 4),
                      "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
