#!/usr/bin/env python3
"""Checks a model written by `trc-run SOURCE.onnx ... --export-onnx EXPORTED`
against the run's last checkpoint (--checkpoint-dir CKPT), with onnx,
onnxruntime and numpy (and PyTorch for --torch-model).

    check_export.py SOURCE EXPORTED CKPT [--torch-model gpt2|bert|gptj]
        [--name-suffix S] [--self-contained] [--shape B,T]
    check_export.py --rewrite SOURCE OUT --name-suffix S

--rewrite makes a test model: SOURCE with S appended to every initializer's
name (uses and metadata 'trc.frozen' follow) and all its initializers in an
external data file OUT.weights beside OUT.

Checks, printing one line per finding and exiting 1 on the first failure:
  * EXPORTED loads and runs in onnxruntime; its graph, opsets, inputs,
    outputs and metadata are SOURCE's.
  * Every initializer the checkpoint holds (a trained parameter) equals the
    checkpoint's tensor exactly and differs from SOURCE's; frozen ones (model
    metadata 'trc.frozen') keep SOURCE's value; any other float initializer
    that changed must be a tied copy: equal to a trained parameter or its
    transpose (printed as "tied NAME = transpose(PARAM)"); the rest keep
    SOURCE's value.
  * --self-contained: no tensor of EXPORTED uses external data, and it runs
    from a folder of its own.
  * --torch-model: onnxruntime's output on EXPORTED equals the PyTorch
    model (scripts/export_models.py) with the checkpoint's weights loaded,
    within 1e-4, on random token ids of shape --shape (default 3,20: not the
    training's); the parameter of torch name N is the checkpoint's N + S
    (--name-suffix).
"""
import argparse
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper
from safetensors.numpy import load_file


def fail(message):
    sys.exit("error: " + message)


def initializers(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def run_ort(path, feeds):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def rewrite(source, out, suffix):
    model = onnx.load(source)
    names = {t.name for t in model.graph.initializer}
    for t in model.graph.initializer:
        t.name += suffix
    for v in model.graph.input:
        if v.name in names:
            v.name += suffix
    for node in model.graph.node:
        node.input[:] = [n + suffix if n in names else n for n in node.input]
    for prop in model.metadata_props:
        if prop.key == "trc.frozen":
            prop.value = ",".join(n + suffix for n in prop.value.split(",") if n)
    onnx.save_model(model, out, save_as_external_data=True, all_tensors_to_one_file=True,
                    location=os.path.basename(out) + ".weights", size_threshold=0)


def main():
    if sys.argv[1:2] == ["--rewrite"]:
        p = argparse.ArgumentParser()
        p.add_argument("--rewrite", nargs=2, metavar=("SOURCE", "OUT"))
        p.add_argument("--name-suffix", required=True)
        a = p.parse_args()
        return rewrite(*a.rewrite, a.name_suffix)
    p = argparse.ArgumentParser()
    p.add_argument("source")
    p.add_argument("exported")
    p.add_argument("ckpt")
    p.add_argument("--torch-model")
    p.add_argument("--name-suffix", default="")
    p.add_argument("--self-contained", action="store_true")
    p.add_argument("--shape", default="3,20")
    a = p.parse_args()
    batch, seq = (int(n) for n in a.shape.split(","))

    source = onnx.load(a.source)  # loads external data too
    exported_raw = onnx.load(a.exported, load_external_data=False)
    exported = onnx.load(a.exported)
    latest = open(os.path.join(a.ckpt, "latest")).read().strip()
    trained = load_file(os.path.join(a.ckpt, os.path.basename(latest), "tensors.safetensors"))

    # The model around the weights is unchanged.
    for what in ("node", "input", "output"):
        if list(getattr(source.graph, what)) != list(getattr(exported.graph, what)):
            fail(f"the exported graph's {what}s differ from the source's")
    if list(source.opset_import) != list(exported.opset_import) or \
            list(source.metadata_props) != list(exported.metadata_props):
        fail("the exported model's opsets or metadata differ from the source's")
    print("graph, opsets and metadata unchanged")

    frozen = set()
    for prop in source.metadata_props:
        if prop.key == "trc.frozen":
            frozen.update(n for n in prop.value.split(",") if n)
    before, after = initializers(source), initializers(exported)
    if set(before) != set(after):
        fail("the exported model has other initializers than the source")
    counts = {"trained": 0, "frozen": 0, "tied": 0, "kept": 0}
    for name, value in after.items():
        old = before[name]
        if value.dtype != old.dtype or value.shape != old.shape:
            fail(f"initializer {name!r} is {value.dtype} {value.shape}, was {old.dtype} {old.shape}")
        if name in frozen:
            if not np.array_equal(value, old):
                fail(f"frozen initializer {name!r} changed")
            counts["frozen"] += 1
        elif name in trained:
            if not np.array_equal(value, trained[name]):
                fail(f"initializer {name!r} is not the checkpoint's trained value")
            if np.array_equal(value, old):
                fail(f"initializer {name!r} still holds its untrained value")
            counts["trained"] += 1
        elif np.array_equal(value, old):
            counts["kept"] += 1
        else:
            ties = [f"transpose({p})" if t else p for p, w in trained.items()
                    for t, cand in ((False, w), (True, w.T if w.ndim == 2 else None))
                    if cand is not None and cand.shape == value.shape and np.array_equal(cand, value)]
            if len(ties) != 1:
                fail(f"initializer {name!r} changed but is no trained parameter (matches: {ties})")
            print(f"tied {name} = {ties[0]}")
            counts["tied"] += 1
    print("initializers: " + ", ".join(f"{n} {k}" for k, n in counts.items()))

    if a.self_contained:
        external = [t.name for t in exported_raw.graph.initializer
                    if t.data_location == onnx.TensorProto.EXTERNAL]
        if external:
            fail(f"initializers {external} use external data")
        with tempfile.TemporaryDirectory() as folder:
            alone = os.path.join(folder, "alone.onnx")
            shutil.copy(a.exported, alone)
            run_ort(alone, feeds_for(exported, batch, seq))
        print("self-contained: no external data, runs from a folder of its own")

    # It runs, and its output is the trained model's.
    feeds = feeds_for(exported, batch, seq)
    got = run_ort(a.exported, feeds)
    untrained = run_ort(a.source, feeds)
    print(f"onnxruntime runs it: {exported.graph.output[0].name} {float(np.asarray(got[0]).ravel()[0]):.4f}"
          f" (untrained {float(np.asarray(untrained[0]).ravel()[0]):.4f})")
    if a.torch_model:
        import torch
        sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
        import export_models as em
        model = em.build(a.torch_model)
        with torch.no_grad():
            for name, param in model.named_parameters():
                param.copy_(torch.from_numpy(trained[name + a.name_suffix]))
            want = model(*(torch.from_numpy(feeds[i.name]) for i in exported.graph.input
                           if i.name not in before)).numpy()
        diff = float(np.max(np.abs(np.asarray(got[0]) - want)))
        print(f"onnxruntime vs PyTorch with the trained weights: max difference {diff:.1e}")
        if not diff <= 1e-4:
            fail(f"onnxruntime's output on the exported model differs from PyTorch's by {diff}")


def feeds_for(model, batch, seq):
    """Random token ids for every integer graph input, [batch, seq]."""
    rng = np.random.default_rng(7)
    names = {t.name for t in model.graph.initializer}
    return {i.name: rng.integers(0, 256, (batch, seq)).astype(np.int64)
            for i in model.graph.input if i.name not in names}


if __name__ == "__main__":
    main()
