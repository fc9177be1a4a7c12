#!/usr/bin/env python3
"""Per-rank communication and parameter memory of trc's tensor (and
sequence) parallelism against Megatron-LM's formulas.

    python3 bench/tensor_parallel.py [--size bench|small] [--batch 8] [--seq 256]
                                     [--degrees 1,2,4,8] [--trc-opt PATH]

It exports a GPT-2-style model (scripts/export_models.py, --size: "bench"
is 4 layers, hidden 256, 8 heads, vocabulary 256; "small" the test model),
compiles its training step with trc-opt through trc-run's pipeline
(--trc-training-pipeline="tensor-degree=T sequence-parallel=S"), stops
before lowering and reads what trc-partition wrote:

  * communication per step from @main_grad's collectives (as
    test-trc-print-sharding prints them): the count and bytes of the
    full-size ones (b*s*h floats) and of the loss' row-sized ones;
  * parameters per rank from @train_step's `trc.param` arguments (their
    per-rank types).

Megatron's formulas (Shoeybi et al. 2019; Korthikanti et al. 2022), L
layers, b*s*h activations, V vocabulary, f = 4h:
  * all-reduces of b*s*h: 2 per layer forward, 2 backward, plus the
    vocabulary-parallel embedding's forward and the LM head's backward:
    4L + 2; with sequence parallelism each becomes a reduce-scatter and an
    all-gather of the same volume (4L + 2 of each);
  * vocabulary-parallel cross-entropy: 3 all-reduces of b*s floats forward,
    and its softmax' 2 backward;
  * parameters per rank: (12h^2 + 7h) L / T + V h / T (split: QKV, out,
    fc, proj matrices, QKV and fc biases, the word embedding) plus
    (6h) L + P h + 2h (whole: out and proj biases, layer norms, position
    embeddings, final norm).
Prints a table per degree with measured / formula ratios (1.000 = equal).
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = {"bench": dict(V=256, P=256, h=256, heads=8, L=4),
         "small": dict(V=256, P=64, h=64, heads=4, L=2)}


def export(size, batch, seq, out):
    python = os.path.join(ROOT, ".venv", "bin", "python")
    subprocess.run([python, os.path.join(ROOT, "scripts", "export_models.py"), "--out", out,
                    "--models", "gpt2", "--opsets", "17", "--static-only", "--size", size,
                    "--batch", str(batch), "--seq", str(seq)],
                   check=True, capture_output=True)
    return os.path.join(out, "gpt2_op17.onnx")


def compile_step(trc_opt, model, degree, sequence, work):
    options = f"tensor-degree={degree} sequence-parallel={'true' if sequence else 'false'}"
    ir = os.path.join(work, f"tp{degree}{'sp' if sequence else ''}.mlir")
    done = subprocess.run([trc_opt, model, f"--trc-training-pipeline={options}",
                           "--test-trc-print-sharding", "-o", ir],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"error: trc-opt failed for {options}:\n{done.stderr}")
    return done.stdout, open(ir).read()


def collectives(printed, function):
    """(kind, bytes) of each collective printed for @function."""
    out, inside = [], False
    for line in printed.splitlines():
        if line.startswith("sharding @"):
            inside = line.strip() == f"sharding @{function}"
            continue
        m = re.match(r"\s+collective trc\.(\w+)(?: \w+)? \w+: (\d+) bytes", line)
        if inside and m:
            out.append((m.group(1), int(m.group(2))))
    return out


def params_per_rank(ir):
    """Trainable parameters: @train_step's trc.param arguments that have
    optimizer state (the attention-mask buffers are frozen)."""
    signature = next(line for line in ir.splitlines() if "func.func @train_step" in line)
    trained = set(re.findall(r'trc\.state = "adam\.m:([^"]+)"', signature))
    total = 0
    for m in re.finditer(r'tensor<([0-9x]+)xf32> \{[^}]*trc\.param = "([^"]+)"', signature):
        if m.group(2) not in trained:
            continue
        n = 1
        for d in m.group(1).split("x"):
            n *= int(d)
        total += n
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="bench")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--degrees", default="1,2,4,8")
    parser.add_argument("--trc-opt", default=os.path.join(ROOT, "build", "tools", "trc-opt",
                                                          "trc-opt"))
    args = parser.parse_args()
    s = SIZES[args.size]
    h, L, V, P = s["h"], s["L"], s["V"], s["P"]
    bsh = args.batch * args.seq * h * 4
    rows = args.batch * args.seq * 4
    with tempfile.TemporaryDirectory() as work:
        model = export(args.size, args.batch, args.seq, work)
        print(f"GPT-2-style model: L={L} h={h} heads={s['heads']} V={V}, batch {args.batch} x "
              f"sequence {args.seq} (b*s*h = {bsh} bytes), fp32, trc-opt "
              f"--trc-training-pipeline (trc-run's pipeline)")
        print(f"{'plan':<12} {'kind':<15} {'count':>6} {'formula':>8} {'MB/step':>9} "
              f"{'formula':>9} {'ratio':>6}   params/rank  formula  ratio")
        for degree in (int(d) for d in args.degrees.split(",")):
            for sequence in ((False, True) if degree > 1 else (False,)):
                printed, ir = compile_step(args.trc_opt, model, degree, sequence, work)
                ops = collectives(printed, "main_grad")
                big = [(k, b) for k, b in ops if b >= bsh // degree]
                small = [(k, b) for k, b in ops if b == rows]
                split = (12 * h * h + 7 * h) * L + V * h
                whole = 6 * h * L + P * h + 2 * h
                params = params_per_rank(ir)
                expect_params = split // degree + whole
                plan = f"tp={degree}" + ("+sp" if sequence else "")
                kinds = (("reduce_scatter", "all_gather") if sequence else ("all_reduce",))
                if degree == 1:
                    kinds = ()
                lines = []
                for kind in kinds:
                    got = [b for k, b in big if k == kind]
                    # bytes into the collective: all-reduce and reduce-scatter
                    # take b*s*h, all-gather sends its 1/T part.
                    unit = bsh // degree if kind == "all_gather" else bsh
                    lines.append((kind, len(got), 4 * L + 2, sum(got), (4 * L + 2) * unit))
                if degree > 1:
                    got = [b for k, b in small]
                    lines.append(("loss rows", len(got), 5, sum(got), 5 * rows))
                if not lines:
                    lines.append(("(none)", len(ops), 0, 0, 0))
                for i, (kind, n, fn, b, fb) in enumerate(lines):
                    ratio = f"{b / fb:.3f}" if fb else "-"
                    tail = (f"   {params:>11,} {expect_params:>8,} {params / expect_params:.3f}"
                            if i == 0 else "")
                    print(f"{plan if i == 0 else '':<12} {kind:<15} {n:>6} {fn:>8} "
                          f"{b / 1e6:>9.3f} {fb / 1e6:>9.3f} {ratio:>6}{tail}")


if __name__ == "__main__":
    main()
