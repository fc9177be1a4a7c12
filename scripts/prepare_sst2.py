#!/usr/bin/env python3
"""Tokenizes GLUE SST-2 into row data for trc-run (--data / --eval-data).

    .venv/bin/python scripts/prepare_sst2.py [--data ../shared/data/sst2] --out DIR
                                             [--vocab 4096] [--seq 64]

Tokenizer: a byte-level BPE (GPT-2's scheme: bytes mapped to printable
characters, merges learned from data) trained offline with the `tokenizers`
PyPI package on the *train* split's sentences only, `--vocab` entries with
id 0 reserved for padding ("<pad>"). No pretrained vocabulary is downloaded.

Writes DIR/train.npz, DIR/dev.npz and DIR/test.npz (np.savez, stored), each
with input_ids [N, seq] int64 (a sentence's tokens, truncated to seq, then
0s on the right) and labels [N] int64 (0 negative, 1 positive), the
arrays GPT2Classifier (scripts/export_models.py --models gpt2cls) takes;
and DIR/tokenizer.json. Prints each split's rows, the share truncated and
the label balance. Precondition: the `tokenizers` and numpy packages
(scripts/setup.sh installs them). Deterministic for the same data.
"""
import argparse
import os
import sys

import numpy as np

PAD = "<pad>"  # id 0: GPT2Classifier.PAD_ID


def read_split(path):
    """(labels, sentences) of a label<TAB>sentence file with a header line."""
    labels, sentences = [], []
    with open(path, encoding="utf-8") as f:
        next(f)  # header
        for number, line in enumerate(f, start=2):
            label, sep, sentence = line.rstrip("\n").partition("\t")
            if not sep or label not in ("0", "1") or not sentence.strip():
                sys.exit(f"error: {path}:{number}: expected 'label<TAB>sentence' with label 0 or 1")
            labels.append(int(label))
            sentences.append(sentence)
    return labels, sentences


def train_tokenizer(sentences, vocab):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=[PAD], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(sentences, trainer)
    assert tok.token_to_id(PAD) == 0, "the pad token must be id 0"
    return tok


def rows(tok, labels, sentences, seq):
    ids = np.zeros((len(sentences), seq), dtype=np.int64)
    truncated = 0
    for i, enc in enumerate(tok.encode_batch(sentences)):
        t = enc.ids[:seq]
        truncated += len(enc.ids) > seq
        ids[i, :len(t)] = t
    return ids, np.asarray(labels, dtype=np.int64), truncated


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "data", "sst2"))
    parser.add_argument("--out", required=True)
    parser.add_argument("--vocab", type=int, default=4096)
    parser.add_argument("--seq", type=int, default=64)
    args = parser.parse_args()
    splits = {}
    for split in ("train", "dev", "test"):
        path = os.path.join(args.data, f"{split}.tsv")
        if not os.path.isfile(path):
            sys.exit(f"error: {path}: no such file (--data names the folder of SST-2's .tsv files)")
        splits[split] = read_split(path)
    os.makedirs(args.out, exist_ok=True)
    tok = train_tokenizer(splits["train"][1], args.vocab)
    tok.save(os.path.join(args.out, "tokenizer.json"))
    for split, (labels, sentences) in splits.items():
        ids, y, truncated = rows(tok, labels, sentences, args.seq)
        np.savez(os.path.join(args.out, f"{split}.npz"), input_ids=ids, labels=y)
        print(f"{split}: {len(y)} rows of {args.seq} tokens, {truncated} truncated, "
              f"{y.mean():.3f} positive")
    print(f"vocabulary: {tok.get_vocab_size()} (byte-level BPE, id 0 = {PAD})")


if __name__ == "__main__":
    main()
