#!/usr/bin/env python3
"""Expectation before measurement: GPT-2 124M's compiled CUDA step priced
kernel by kernel on H100 and H200 rates, beside llm.c's published speed.

    python3 bench/predict_gpu_step.py [--onnx gpt2-124m.onnx] [--batch 8] [--seq 1024]
                                      [--json OUT.json] [--top 12]

trc-opt compiles the training step as trc-run --device cuda does (fused
attention, AdamW, bf16 or fp32) up to its kernels (--trc-cuda-kernels) and
trc-print-kernel-costs lists every kernel launch (bytes of the buffers it
touches, each once; FLOPs of its body over its threads) and every cuBLASLt
product (2 b m n k FLOPs, operand and result bytes). Each item's time is the
largest of FLOPs / rate (tensor cores for products: dense bf16, or fp32 on
the CUDA cores without TF32, trc's default; CUDA cores for kernels), bytes /
memory bandwidth, and a launch's cost; the step is their sum. Two sets of
ceilings per card: the spec sheet's, and what this workplace measured on its
machines (a device-to-device copy and a bf16 8192^3 product, recorded in
the device tool's KINDS.md). Launch cost is an assumption, printed with the
result: 4 us per launch without CUDA graphs (the host's launch rate), 1.5 us
with them. MFU counts model FLOPs 6N + 12 L T d per token over the dense
bf16 peak (bench/train_gpu.py's convention).

llm.c's figures are derived from its published runs (tokens / time / GPUs),
not measured here: GPT-2 124M, 10B tokens in 90 min on 8 A100s (the
"Reproducing GPT-2 (124M) in llm.c" discussion) and in 45 min on 8 H100s.

Nothing here is timed: the point is a prediction to hold the first GPU run
against (device_run.py prints it beside the measurement) and the list of
kernels that decide it. Anything missing ends with "predict_gpu_step.py: error:".
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Rates in FLOP/s and bytes/s. fp32 products without TF32 run on the CUDA
# cores (67 TFLOP/s on both cards' sheets), as do the kernels' FLOPs.
CARDS = {
    "H100 SXM": {
        "spec": {"bf16_mma": 989.4e12, "fp32": 66.9e12, "bandwidth": 3.35e12},
        "measured": {"bf16_mma": 798e12, "fp32": 66.9e12, "bandwidth": 3.0e12},
    },
    "H200": {
        "spec": {"bf16_mma": 989.4e12, "fp32": 66.9e12, "bandwidth": 4.8e12},
        "measured": {"bf16_mma": 788e12, "fp32": 66.9e12, "bandwidth": 4.3e12},
    },
}
LAUNCH_S = {"graphs off": 4e-6, "graphs on": 1.5e-6}
DENSE_BF16_PEAK = 989.4e12  # H100 and H200 SXM
LLMC_PUBLISHED = [  # (what, tokens/s per GPU, its card's dense bf16 peak, how derived)
    ("llm.c, 8x A100 80GB", 10e9 / (90 * 60) / 8, 312e12, "10B tokens in 90 min on 8 GPUs"),
    ("llm.c, 8x H100", 10e9 / (45 * 60) / 8, DENSE_BF16_PEAK, "10B tokens in 45 min on 8 GPUs"),
]


def die(message):
    sys.exit(f"predict_gpu_step.py: error: {message}")


def kernel_costs(trc_opt, onnx, batch, seq, precision):
    cmd = [trc_opt, onnx, "--dim", f"batch={batch}", "--dim", f"sequence={seq}",
           f"--trc-training-pipeline=fuse-attention=true precision={precision}",
           "--trc-select-entry", "--trc-cuda-kernels", "--trc-print-kernel-costs",
           "-o", os.devnull]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        die(f"{' '.join(cmd)} failed: {r.stderr.strip()[-400:]}")
    return json.loads(r.stdout)


def item_seconds(item, rates, launch):
    if item["kind"] == "matmul":
        rate = rates["bf16_mma"] if item["type"].split("_")[0] in ("bf16", "f16") else rates["fp32"]
    else:
        rate = rates["fp32"]
    return max(item["flops"] / rate, item["bytes"] / rates["bandwidth"], launch)


def describe(item):
    if item["kind"] == "matmul":
        return (f"matmul {item['type']} {item['batch']}x[{item['m']}x{item['k']}]"
                f"x[{item['k']}x{item['n']}]")
    return f"kernel {item['threads']} threads"


def model_flops_per_token(layers, width, vocab, context, seq):
    # GPT-2: per layer 12 d^2 weights (+ biases, norms: small); embeddings.
    n = layers * (12 * width * width + 13 * width) + (vocab + context) * width + 2 * width
    return 6 * n + 12 * layers * seq * width


def predict(costs, batch, seq, flops_per_token):
    rows = []
    tokens = batch * seq
    for card, ceilings in CARDS.items():
        for source, rates in ceilings.items():
            for graphs, launch in LAUNCH_S.items():
                step = sum(item_seconds(i, rates, launch) * i["count"] for i in costs["items"])
                rows.append({"card": card, "ceilings": source, "cuda_graphs": graphs,
                             "step_ms": step * 1e3, "tokens_per_s": tokens / step,
                             "mfu": tokens / step * flops_per_token / DENSE_BF16_PEAK})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--onnx", default="", help="GPT-2 124M exported (default: export it)")
    ap.add_argument("--trc-opt", default=os.path.join(ROOT, "build/tools/trc-opt/trc-opt"))
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--precisions", default="bf16,fp32")
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--json", default="", help="also write the prediction here")
    a = ap.parse_args()
    if not os.access(a.trc_opt, os.X_OK):
        die(f"no trc-opt at {a.trc_opt} (build first: bash scripts/build.sh)")
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    with tempfile.TemporaryDirectory() as tmp:
        onnx = a.onnx
        if not onnx:
            import export_models as em
            em.configure("gpt2-124m")
            onnx = os.path.join(tmp, "gpt2-124m.onnx")
            em.export(em.build("gpt2", init="gpt2"), onnx, 17, dynamic=True)
        elif not os.path.exists(onnx):
            die(f"no model {onnx}")
        flops_per_token = model_flops_per_token(12, 768, 50257, 1024, a.seq)
        out = {"model": "gpt2-124m", "batch": a.batch, "seq": a.seq,
               "model_flops_per_token": flops_per_token, "launch_s": LAUNCH_S,
               "cards": CARDS, "llmc_published": [
                   {"what": w, "tokens_per_s_per_gpu": t, "mfu": t * flops_per_token / peak,
                    "derived_from": d} for w, t, peak, d in LLMC_PUBLISHED], "precisions": {}}
        for precision in a.precisions.split(","):
            costs = kernel_costs(a.trc_opt, onnx, a.batch, a.seq, precision)
            rows = predict(costs, a.batch, a.seq, flops_per_token)
            mm = [i for i in costs["items"] if i["kind"] == "matmul"]
            kk = [i for i in costs["items"] if i["kind"] == "kernel"]
            summary = {
                "kernel_launches": costs["kernels"], "matmul_calls": costs["matmuls"],
                "distinct_items": len(costs["items"]),
                "matmul_flops": sum(i["flops"] * i["count"] for i in mm),
                "matmul_bytes": sum(i["bytes"] * i["count"] for i in mm),
                "kernel_flops": sum(i["flops"] * i["count"] for i in kk),
                "kernel_bytes": sum(i["bytes"] * i["count"] for i in kk)}
            out["precisions"][precision] = {"summary": summary, "predicted": rows,
                                            "items": costs["items"]}
            print(f"\nGPT-2 124M training step, {precision}, batch {a.batch} x {a.seq} "
                  f"({a.batch * a.seq} tokens), fused attention, AdamW")
            print(f"  {costs['kernels']} kernel launches + {costs['matmuls']} cuBLASLt products; "
                  f"products {summary['matmul_flops'] / 1e12:.2f} TFLOP, "
                  f"{summary['matmul_bytes'] / 1e9:.1f} GB; kernels "
                  f"{summary['kernel_flops'] / 1e9:.1f} GFLOP, {summary['kernel_bytes'] / 1e9:.1f} GB")
            ref = CARDS["H100 SXM"]["measured"]
            ranked = sorted(costs["items"], key=lambda i: -item_seconds(i, ref, 0) * i["count"])
            total = sum(item_seconds(i, ref, 0) * i["count"] for i in costs["items"])
            print(f"  largest items on H100 (measured ceilings, launches free): "
                  f"{'ms':>7} {'share':>6}  count x item (bytes, FLOPs each)")
            for i in ranked[:a.top]:
                t = item_seconds(i, ref, 0) * i["count"]
                print(f"    {t * 1e3:7.2f} {100 * t / total:5.1f}%  {i['count']:>4} x {describe(i)} "
                      f"({i['bytes'] / 1e6:.0f} MB, {i['flops'] / 1e9:.2f} GFLOP)")
            print(f"  {'card':<9} {'ceilings':<9} {'graphs':<10} {'ms/step':>8} {'tokens/s':>9} "
                  f"{'MFU':>6}")
            for r in rows:
                print(f"  {r['card']:<9} {r['ceilings']:<9} {r['cuda_graphs']:<10} "
                      f"{r['step_ms']:8.1f} {r['tokens_per_s']:9.0f} {100 * r['mfu']:5.1f}%")
        print("\npublished (derived, not measured here):")
        for w, t, peak, d in LLMC_PUBLISHED:
            print(f"  {w:<20} {t:9.0f} tokens/s per GPU, MFU {100 * t * flops_per_token / peak:4.1f}%"
                  f"  ({d})")
        if a.json:
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
