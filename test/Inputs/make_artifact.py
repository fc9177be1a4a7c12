#!/usr/bin/env python3
"""Writes trc artifacts (docs/ARTIFACT.md) and .npy inputs for the trc-run
lit tests (test/Runtime/), without the compiler: the program is the
runtime tests' hand-written program (runtime/tests/TestProgram.c) compiled
with `cc -shared -fPIC`, the manifest and weights are written here. Each
program declares the manifest it was written for (trc_signature,
runtime/formats/ProgramSignature.h).

    python3 test/Inputs/make_artifact.py OUT_DIR

Artifacts (folders under OUT_DIR):
  good/                the artifact of TestProgram.c (see its comment)
  cuda/                the same, but `target cuda`
  bad-weights/         one byte of weights.bin flipped (checksum mismatch)
  truncated-manifest/  manifest.trc cut before its `end` record
  no-program/          program.so missing
  gather/              an embedding lookup: input idx i64 [4] with a `bound`
                       record (a table of 5 rows), param table f32 [5, 2],
                       output y f32 [4, 2] = table[idx], input lab i64 [4]
                       with a `labels` record (3 classes, ignore index -100)
Inputs and expected outputs (NumPy files in OUT_DIR):
  x.npy, two.npy       f32 [4, 3] inputs x and in/two
  x_shape.npy          f32 [3, 4] (wrong shape)
  x_f64.npy            f64 [4, 3] (wrong dtype)
  corrupt.npy          not a .npy file
  truncated.npy        x.npy cut in its data
  expected_y.npy, expected_sum.npy  what good/ computes from x.npy, two.npy
  idx.npy, lab.npy     good inputs of gather/ (idx [0, 4, -1, 2], lab [0, 2, -100, 1])
  idx_big.npy          idx with 1000000; idx_min.npy: with int64 min;
  idx_rows.npy         idx with 5 (= the rows); idx_neg.npy: with -6
  lab_big.npy          lab with 3 (= the classes); lab_neg.npy: with -1
Deterministic.
"""
import os
import shutil
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SAFE = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/-")

W = np.arange(1, 7, dtype=np.float32).reshape(3, 2)
B = np.array([0.5, -1.0], dtype=np.float32)


def fnv1a64(data):
    """The manifest checksum as trc spelled it before XXH3 (bare hex, FNV-1a
    64). trc now writes xxh3:<hex>, but runtimes still read this spelling;
    these artifacts keep that path tested (docs/ARTIFACT.md)."""
    h = 0xCBF29CE484222325
    for byte in data:
        h ^= byte
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def encode(name):
    return "".join(chr(c) if c in SAFE else "%%%02X" % c for c in name.encode())


def weights_blob(params):
    """Concatenates params at 64-byte aligned offsets; returns bytes, offsets."""
    blob = bytearray()
    offsets = []
    for array in params:
        blob.extend(b"\0" * (-len(blob) % 64))
        offsets.append(len(blob))
        blob.extend(np.ascontiguousarray(array).tobytes())
    blob.extend(b"\0" * (-len(blob) % 64))
    return bytes(blob), offsets


def shape_fields(shape):
    return " ".join([str(len(shape))] + [str(d) for d in shape])


def manifest(program, weights, offsets, target="cpu"):
    lines = [
        "trc-artifact 1",
        "# written by test/Inputs/make_artifact.py",
        "target %s" % target,
        "program program.so %d %s" % (len(program), fnv1a64(program)),
        "entry trc_entry",
        "arena 64",
        "weights weights.bin %d %s" % (len(weights), fnv1a64(weights)),
        "slot 0 input %s f32 %s" % (encode("x"), shape_fields((4, 3))),
        "slot 1 param %s f32 %s %d trainable" % (encode("W"), shape_fields(W.shape), offsets[0]),
        "slot 2 output %s f32 %s" % (encode("y"), shape_fields((4, 2))),
        "slot 3 param %s f32 %s %d frozen" % (encode("b"), shape_fields(B.shape), offsets[1]),
        "slot 4 output %s f32 %s" % (encode("out/sum"), shape_fields((4, 3))),
        "slot 5 input %s f32 %s" % (encode("in/two"), shape_fields((4, 3))),
        "end",
    ]
    return ("\n".join(lines) + "\n").encode()


def write_artifact(folder, program, target="cpu"):
    os.makedirs(folder)
    weights, offsets = weights_blob([W, B])
    with open(os.path.join(folder, "program.so"), "wb") as f:
        f.write(program)
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        f.write(weights)
    with open(os.path.join(folder, "manifest.trc"), "wb") as f:
        f.write(manifest(program, weights, offsets, target))


GATHER_C = r"""
#include <stdint.h>
const char trc_signature[] =
    "trc-signature 1\n"
    "target cpu\n"
    "entry trc_entry\n"
    "arena 64\n"
    "slot 0 input idx i64 1 4\n"
    "bound 0 5\n"
    "slot 1 param table f32 2 5 2\n"
    "slot 2 output y f32 2 4 2\n"
    "slot 3 input lab i64 1 4\n"
    "labels 3 3 -100\n";
void trc_entry(void **slots, void *arena) {
  (void)arena;
  const int64_t *idx = (const int64_t *)slots[0];
  const float *table = (const float *)slots[1];
  float *y = (float *)slots[2];
  for (int i = 0; i < 4; ++i) {
    int64_t r = idx[i] < 0 ? idx[i] + 5 : idx[i];
    y[i * 2] = table[r * 2];
    y[i * 2 + 1] = table[r * 2 + 1];
  }
}
"""
TABLE = np.arange(10, dtype=np.float32).reshape(5, 2)


def write_gather_artifact(folder, program):
    os.makedirs(folder)
    weights, offsets = weights_blob([TABLE])
    lines = [
        "trc-artifact 1",
        "target cpu",
        "program program.so %d %s" % (len(program), fnv1a64(program)),
        "entry trc_entry",
        "arena 64",
        "weights weights.bin %d %s" % (len(weights), fnv1a64(weights)),
        "slot 0 input idx i64 %s" % shape_fields((4,)),
        "bound 0 5",
        "slot 1 param table f32 %s %d frozen" % (shape_fields(TABLE.shape), offsets[0]),
        "slot 2 output y f32 %s" % shape_fields((4, 2)),
        "slot 3 input lab i64 %s" % shape_fields((4,)),
        "labels 3 3 -100",
        "end",
    ]
    with open(os.path.join(folder, "program.so"), "wb") as f:
        f.write(program)
    with open(os.path.join(folder, "weights.bin"), "wb") as f:
        f.write(weights)
    with open(os.path.join(folder, "manifest.trc"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    so = os.path.join(out, "program.so")
    cc = os.environ.get("CC", "cc")
    subprocess.check_call([cc, "-shared", "-fPIC", "-O1", "-o", so,
                           os.path.join(HERE, "..", "..", "runtime", "tests",
                                        "TestProgram.c")])
    with open(so, "rb") as f:
        program = f.read()
    os.remove(so)

    for name in ("good", "cuda", "bad-weights", "truncated-manifest", "no-program"):
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    write_artifact(os.path.join(out, "good"), program)
    write_artifact(os.path.join(out, "cuda"), program, target="cuda")

    write_artifact(os.path.join(out, "bad-weights"), program)
    path = os.path.join(out, "bad-weights", "weights.bin")
    data = bytearray(open(path, "rb").read())
    data[5] ^= 0x20
    open(path, "wb").write(bytes(data))

    write_artifact(os.path.join(out, "truncated-manifest"), program)
    path = os.path.join(out, "truncated-manifest", "manifest.trc")
    text = open(path, "rb").read()
    open(path, "wb").write(text[: text.rindex(b"slot 5")])

    write_artifact(os.path.join(out, "no-program"), program)
    os.remove(os.path.join(out, "no-program", "program.so"))

    source = os.path.join(out, "gather.c")
    with open(source, "w") as f:
        f.write(GATHER_C)
    subprocess.check_call([cc, "-shared", "-fPIC", "-O1", "-o", so, source])
    os.remove(source)
    with open(so, "rb") as f:
        gather_program = f.read()
    os.remove(so)
    shutil.rmtree(os.path.join(out, "gather"), ignore_errors=True)
    write_gather_artifact(os.path.join(out, "gather"), gather_program)
    idx = np.array([0, 4, -1, 2], dtype=np.int64)
    lab = np.array([0, 2, -100, 1], dtype=np.int64)
    np.save(os.path.join(out, "idx.npy"), idx)
    np.save(os.path.join(out, "lab.npy"), lab)
    for name, position, value in (("idx_big", 1, 1000000), ("idx_min", 3, -2**63),
                                  ("idx_rows", 2, 5), ("idx_neg", 0, -6),
                                  ("lab_big", 3, 3), ("lab_neg", 1, -1)):
        bad = (idx if name.startswith("idx") else lab).copy()
        bad[position] = value
        np.save(os.path.join(out, name + ".npy"), bad)
    np.save(os.path.join(out, "expected_gather.npy"), TABLE[idx])

    x = np.arange(12, dtype=np.float32).reshape(4, 3) / 4 - 1
    two = np.arange(12, dtype=np.float32).reshape(4, 3) * 10
    np.save(os.path.join(out, "x.npy"), x)
    np.save(os.path.join(out, "two.npy"), two)
    np.save(os.path.join(out, "x_shape.npy"), x.reshape(3, 4))
    np.save(os.path.join(out, "x_f64.npy"), x.astype(np.float64))
    np.save(os.path.join(out, "expected_y.npy"), x @ W + B)
    np.save(os.path.join(out, "expected_sum.npy"), x + two)
    with open(os.path.join(out, "corrupt.npy"), "wb") as f:
        f.write(b"this is not a numpy file\n")
    raw = open(os.path.join(out, "x.npy"), "rb").read()
    with open(os.path.join(out, "truncated.npy"), "wb") as f:
        f.write(raw[:-5])


if __name__ == "__main__":
    main()
