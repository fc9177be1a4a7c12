"""trc.onnx_export: a PyTorch module exported to ONNX the way trc trains
it, on torch 1.13 (Debian's python3-torch) and on torch 2.x alike. The
package's `trc.export` and scripts/export_torch.py (its command line) call
export_for_training.

    from trc.onnx_export import export_for_training
    export_for_training(model, {"input_ids": ids, "labels": ids}, "m.onnx")

`model` is called with the example inputs as keyword arguments and returns
the loss: a scalar tensor, an object with a `.loss` (transformers' outputs)
or a tuple whose first element is the loss. The graph's inputs are the
dict's keys, in order; its output is "loss", and with logits=True also
"logits" (the output's `.logits`, or the tuple's second element), which
trc-run --predictions writes for every eval row (and trc's evaluation pairs
with an integer labels input of its shape for eval_accuracy).

Why not torch.onnx.export's defaults: torch 2's default (the dynamo exporter
with optimize=True) folds parameters and constants into new initializers
(a transposed weight, a position embedding gathered at fixed positions,
causal masks), drops parameters that are zero (a bias) and merges equal ones
(freshly initialized LayerNorm weights), and bakes in the example's shapes;
what is left is no longer the model's training graph. And torch 1.13's
default folds constants and exports in inference mode. So:

* torch 1.x and torch < 2.6 (TorchScript exporter): opset 17,
  training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
  dynamic axes 'batch' (axis 0 of every input) and 'sequence' (axis 1 of
  every input of rank 2); the module's buffers (masks, rotary tables) are
  listed in metadata 'trc.frozen' (mark_buffers_frozen) so that trc does
  not train them.
* torch >= 2.6 (dynamo exporter): dynamo=True, optimize=False (no folding),
  the same dynamic axes as torch.export.Dim('batch') and Dim('sequence')
  (dynamic_shapes), the module in training mode; weights in the .onnx file
  itself (external_data=False) below 1.5 GiB of weights, else beside it in
  PATH.data as torch writes it. The exporter tags each initializer with
  its kind (value_info metadata pkg.torch.export.graph_signature.
  InputSpec.kind: PARAMETER, BUFFER, CONSTANT_TENSOR); the float
  initializers that are not PARAMETERs are also listed in 'trc.frozen'.

Either way the model's metadata records, for trc-run --save-model, the
prefix the wrappers put before the model's own state-dict names
('trc.state_dict_prefix') and a Hugging Face model's config.json
('trc.hf_config'), so that the saved folder loads with from_pretrained.

dynamic=False exports the example's shapes (every dimension static).
Precondition: torch (1.13, or 2.x with onnxscript), onnx. Deterministic for
a seeded model.
"""
import contextlib
import sys
import warnings

import torch
import torch.nn as nn

TORCHSCRIPT_OPSET = 17
EXTERNAL_DATA_BYTES = 3 << 29    # 1.5 GiB of weights: beside the model (protobuf's 2 GiB limit)
KIND_KEY = "pkg.torch.export.graph_signature.InputSpec.kind"


class LossModule(nn.Module):
    """`model` called with keyword arguments `names` (the graph's inputs, in
    order), returning its loss alone, or (loss, logits) with `logits`."""

    def __init__(self, model, names, logits=False):
        super().__init__()
        self.model, self.names, self.logits = model, list(names), logits

    def forward(self, *args):
        out = self.model(**dict(zip(self.names, args)))
        if hasattr(out, "loss"):
            loss, logits = out.loss, getattr(out, "logits", None)
        elif isinstance(out, (tuple, list)):
            loss, logits = out[0], out[1] if len(out) > 1 else None
        else:
            loss, logits = out, None
        if not self.logits:
            return loss
        if logits is None:
            raise ValueError("logits=True: the model returns no logits (an output's .logits or "
                             "the second element of its tuple)")
        return loss, logits


def output_names(logits):
    return ["loss", "logits"] if logits else ["loss"]


def has_dynamo_export():
    """Whether torch.onnx.export takes dynamo= and optimize= (torch >= 2.6):
    older torch, 1.13 included, exports with TorchScript."""
    import inspect
    params = inspect.signature(torch.onnx.export).parameters
    return "dynamo" in params and "optimize" in params


def _dynamic_axes(example_inputs):
    """{input: {axis: name}}: axis 0 'batch', and axis 1 'sequence' of rank-2 inputs."""
    axes = {}
    for name, t in example_inputs.items():
        if t.dim() >= 1:
            axes[name] = {0: "batch"}
        if t.dim() == 2:
            axes[name][1] = "sequence"
    return axes


def _logits_axes(wrapper, args):
    """The logits output's dynamic axes (TorchScript needs them named):
    axis 0 'batch', and axis 1 'sequence' when logits are per token."""
    with torch.no_grad():
        logits = wrapper(*args)[1]
    return {0: "batch", 1: "sequence"} if logits.dim() == 3 else {0: "batch"}


def export_for_training(model, example_inputs, path, dynamic=True, opset=None, log=None,
                        saved=None, logits=False):
    """Exports `model` (called as model(**example_inputs), returning its loss)
    to `path` for trc's training: inputs the keys of `example_inputs` in
    order, output 'loss'. dynamic: axis 0 of every input is 'batch' and axis
    1 of every rank-2 input 'sequence'. opset: torch 1.x's is 17, torch 2.x's
    the exporter's default. log(str): told the export call used. saved: the
    module whose state dict trc-run --save-model writes (default `model`; a
    Hugging Face model inside a loss wrapper: that model, whose config goes
    along). logits: the model's logits as a second output 'logits'.
    Returns the call, as text."""
    names = list(example_inputs)
    args = tuple(example_inputs[n] for n in names)
    wrapper = LossModule(model, names, logits)
    wrapper.train()
    axes = _dynamic_axes(example_inputs) if dynamic else None
    outputs = output_names(logits)
    if has_dynamo_export():
        call = _export_dynamo(wrapper, args, names, path, axes, opset, outputs)
    else:
        if axes and logits:
            axes["logits"] = _logits_axes(wrapper, args)
        call = _export_torchscript(wrapper, args, names, path, axes, opset or TORCHSCRIPT_OPSET,
                                   outputs)
    _record_saved_model(wrapper, saved if saved is not None else model, path)
    if log:
        log(call)
    return call


def _export_torchscript(wrapper, args, names, path, axes, opset, outputs):
    call = (f"torch.onnx.export(model, args, {path!r}, input_names={names!r}, "
            f"output_names={outputs!r}, opset_version={opset}, do_constant_folding=False, "
            f"training=torch.onnx.TrainingMode.TRAINING, dynamic_axes={axes!r})")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, args, path, input_names=names, output_names=outputs,
                          opset_version=opset, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.TRAINING, dynamic_axes=axes)
    mark_buffers_frozen(wrapper, path)
    return call


def _export_dynamo(wrapper, args, names, path, axes, opset, outputs):
    shapes = None
    if axes:
        dims = {}
        shapes = tuple({axis: dims.setdefault(dim, torch.export.Dim(dim))
                        for axis, dim in axes.get(n, {}).items()} or None for n in names)
    weights = sum(p.numel() * p.element_size() for p in wrapper.parameters()) + \
        sum(b.numel() * b.element_size() for b in wrapper.buffers())
    external = weights >= EXTERNAL_DATA_BYTES
    options = dict(dynamo=True, optimize=False, external_data=external,
                   input_names=names, output_names=outputs,
                   dynamic_shapes=(shapes,) if shapes else None)   # forward(*args): one argument
    if opset:
        options["opset_version"] = opset
    shown = {k: v for k, v in options.items() if k != "dynamic_shapes"}
    call = (f"torch.onnx.export(model, args, {path!r}, "
            + ", ".join(f"{k}={v!r}" for k, v in shown.items())
            + (f", dynamic_shapes=({_show_shapes(shapes)},)" if shapes else "") + ")")
    with warnings.catch_warnings(), contextlib.redirect_stdout(sys.stderr):
        warnings.simplefilter("ignore")
        torch.onnx.export(wrapper, args, path, **options)
    _mark_non_parameters_frozen(path)
    return call


def _show_shapes(shapes):
    def one(spec):
        if spec is None:
            return "None"
        return "{" + ", ".join(f"{a}: Dim({d.__name__!r})" for a, d in spec.items()) + "}"
    return "(" + ", ".join(one(s) for s in shapes) + ("," if len(shapes) == 1 else "") + ")"


def _mark_non_parameters_frozen(path):
    """Lists in metadata 'trc.frozen' every float initializer that the dynamo
    exporter did not tag PARAMETER (buffers, constant tensors, the
    exporter's own constants), leaving external data where it is."""
    import onnx
    proto = onnx.load(path, load_external_data=False)
    kinds = {vi.name: p.value for vi in proto.graph.value_info
             for p in vi.metadata_props if p.key == KIND_KEY}
    floats = {onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE,
              onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16}
    frozen = [i.name for i in proto.graph.initializer
              if i.data_type in floats and kinds.get(i.name) != "PARAMETER"]
    if frozen:
        entry = proto.metadata_props.add()
        entry.key, entry.value = "trc.frozen", ",".join(frozen)
        onnx.save(proto, path)


def _record_saved_model(wrapper, saved, path):
    """Metadata for trc-run --save-model: 'trc.state_dict_prefix', the prefix
    the wrappers put before `saved`'s own state-dict names (initializers are
    named after the wrapper's), and for a Hugging Face model 'trc.hf_config',
    its config.json."""
    import onnx
    prefix = next(name + "." for name, module in wrapper.named_modules() if module is saved)
    proto = onnx.load(path, load_external_data=False)
    entries = {"trc.state_dict_prefix": prefix}
    if hasattr(saved, "config") and hasattr(saved.config, "to_json_string"):
        entries["trc.hf_config"] = saved.config.to_json_string()
    for key, value in entries.items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.save(proto, path)


def mark_buffers_frozen(model, path):
    """PyTorch 1.13 exports buffers (masks, rotary tables) as initializers, like
    parameters. Record their names in metadata 'trc.frozen' so that trc does not
    train them (trc-opt's --freeze REGEX does the same for other models)."""
    import onnx
    proto = onnx.load(path)
    initializers = {i.name for i in proto.graph.initializer}
    buffers = [name for name, _ in model.named_buffers() if name in initializers]
    if buffers:
        entry = proto.metadata_props.add()
        entry.key, entry.value = "trc.frozen", ",".join(buffers)
        onnx.save(proto, path)


class CausalLMLoss(nn.Module):
    """(input_ids, labels) -> a causal LM's mean next-token cross-entropy
    over the labels that are not -100, from its logits by slicing."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, labels):
        logits = self.model(input_ids=input_ids).logits
        return nn.functional.cross_entropy(
            logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1),
            ignore_index=-100)
