"""trc.Trainer, trc.compile and trc.export.

Trainer runs trc-run's training path in this process (trc._trc.train: the
same command line parser, checks, planner, compiler and Trainer library),
with the keyword arguments as trc-run's flags. Results stay in `output_dir`
(default ./trc-output, the same folder on every rank under mpirun):
  model.onnx       a torch module's export (when given a module)
  *.npz            data given as arrays
  checkpoints/     the run's checkpoints (unless checkpoint_dir is given):
                   the last step is always checkpointed, so evaluate() and
                   a later resume=True start from it
  model/           --save-model: the trained parameters under the module's
                   own names (model.safetensors, a Hugging Face config.json)
  predictions/     predict(): the model's outputs for every row (--predictions)
state_dict() reads model/ back for module.load_state_dict.
"""
import dataclasses
import os
import shutil
import tempfile

from ._flags import to_args
from ._native import native

# evaluate() runs an evaluation alone; trc-run refuses these training-only
# options there (TrainerSettings.cpp's validateEvaluationOnly) or they
# mean nothing without training steps.
_TRAINING_ONLY = {
    "steps", "epochs", "eval_every", "checkpoint_dir", "checkpoint_every", "keep_last",
    "keep_best", "resume", "overwrite_checkpoints", "checkpoint_sync", "export_onnx",
    "save_model", "profile", "profile_summary", "profile_steps", "detect_anomaly", "metrics",
    "tensorboard", "grad_accum", "shuffle", "log_every", "signal_grace", "lr_schedule",
    "predictions",
}
_NEVER = 10 ** 9   # a checkpoint interval no run reaches: only the last step's


class Error(RuntimeError):
    """A training job's error: the message trc-run prints after 'error: '."""


@dataclasses.dataclass
class TrainResult:
    """What train() returns (Hugging Face's TrainOutput, plus every step)."""
    global_step: int
    training_loss: float          # mean of the steps' losses
    metrics: dict
    steps: list                   # one dict per step (on_step's)


@dataclasses.dataclass
class PredictionOutput:
    """What predict() returns: the model's outputs for every row, in row
    order (Hugging Face's PredictionOutput, without label_ids)."""
    outputs: dict                 # output name -> array [rows, ...]
    metrics: dict                 # eval_loss (eval_accuracy...) of the same rows
    step: int                     # the parameters' step (0: the model's own)

    @property
    def predictions(self):
        """The one output (logits), or a tuple of them in the model's order."""
        values = tuple(self.outputs.values())
        return values[0] if len(values) == 1 else values


def read_predictions(folder):
    """(step, {output: array}) from a --predictions folder."""
    import json
    import numpy as np
    with open(os.path.join(folder, "predictions.json")) as f:
        record = json.load(f)
    return record["step"], {name: np.load(os.path.join(folder, file))
                            for name, file in record["outputs"].items()}


@dataclasses.dataclass
class CompiledStep:
    """A training step compiled by trc.compile (trc-run --save-artifact):
    a folder Trainer trains without compiling again."""
    path: str


def _run(args, on_step=None):
    module = native()
    try:
        module.train([os.fspath(a) for a in args], on_step)
    except module.Error as e:
        raise Error(str(e)) from None


def _publish(write, path):
    """Writes `path` through write(tmp) and renames it into place: ranks of
    one job writing the same file never see each other's half."""
    tmp = f"{path}.tmp-{os.getpid()}"
    write(tmp)
    os.replace(tmp, path)
    return path


def export(module, example_inputs, path=None, *, dynamic=True, opset=None, saved=None,
           logits=False):
    """Exports `module` (returning its loss from the example inputs) to an
    ONNX file trc trains: dynamic batch and sequence axes, parameters kept
    (trc.onnx_export says how, for the installed torch). example_inputs: a
    dict {input name: tensor}, or a tuple in forward()'s order. logits: the
    module's logits as a second output (for predict()). Returns the path
    (default: a new temporary file)."""
    import inspect
    from .onnx_export import export_for_training
    if not isinstance(example_inputs, dict):
        names = list(inspect.signature(module.forward).parameters)
        example_inputs = dict(zip(names, example_inputs))
    if path is None:
        path = os.path.join(tempfile.mkdtemp(prefix="trc-export-"), "model.onnx")
    path = os.fspath(path)
    return _publish(lambda tmp: export_for_training(module, example_inputs, tmp, dynamic=dynamic,
                                                    opset=opset, saved=saved, logits=logits),
                    path)


def compile(model, data=None, *, output=None, **options):
    """Compiles `model`'s training step (an .onnx path) for the options'
    shapes, plan and settings (trc-run --save-artifact) into `output`
    (default: a new temporary folder). Row data (`data`: an .npz or a
    folder of .npy) gives the shapes; token data takes seq_len. Returns a
    CompiledStep."""
    output = os.fspath(output) if output else os.path.join(
        tempfile.mkdtemp(prefix="trc-step-"), "step")
    args = [os.fspath(model), f"--save-artifact={output}"]
    if data is not None:
        args.append(f"--data={os.fspath(data)}")
    _run(args + to_args(options, native().flags()))
    return CompiledStep(output)


class Trainer:
    """Trains `model` on `data` with trc-run's options.

    model: an .onnx path, a saved step folder, a CompiledStep, or a torch
      module with `example_inputs` (exported with trc.export; with
      export_logits=True its logits are an output too, for predict()).
    data, eval_data: a path trc-run reads (.npz rows, a folder of .npy, a
      token file) or a dict of arrays {input name: rows}.
    config: the parallel plan: a dict, a JSON file or "auto".
    options: trc-run's training flags, '_' for '-' (batch_size=8, lr=3e-4,
      steps=100, optimizer="adamw", precision="bf16", seq_len=..., ...).
    callbacks: callables each step's dict is passed to (a callback that
      raises stops the run after that step, and train() raises it).
    """

    def __init__(self, model, data=None, *, eval_data=None, config=None, example_inputs=None,
                 export_logits=False, output_dir="trc-output", callbacks=(), **options):
        self.output_dir = os.fspath(output_dir)
        os.makedirs(self.output_dir, exist_ok=True)
        self._options = dict(options)
        to_args(self._options, native().flags())   # unknown keywords fail here
        self._model = self._model_path(model, example_inputs, export_logits)
        # predict() of a module exported without its logits exports them.
        self._module = None if export_logits or isinstance(model, (str, os.PathLike,
                                                                   CompiledStep)) else model
        self._example_inputs = example_inputs
        self._data = self._data_path(data, "train")
        self._eval_data = self._data_path(eval_data, "eval")
        self._config = config
        self._callbacks = list(callbacks)
        self.log_history = []
        self._trained = False

    # -- inputs ------------------------------------------------------------
    def _model_path(self, model, example_inputs, logits):
        if isinstance(model, CompiledStep):
            return model.path
        if isinstance(model, (str, os.PathLike)):
            return os.fspath(model)
        if example_inputs is None:
            raise TypeError("a torch module needs example_inputs (a dict of input tensors whose "
                            "forward returns the loss) to be exported")
        return export(model, example_inputs, os.path.join(self.output_dir, "model.onnx"),
                      logits=logits)

    def _data_path(self, data, name):
        if data is None or isinstance(data, (str, os.PathLike)):
            return None if data is None else os.fspath(data)
        import numpy as np
        arrays = {k: np.asarray(v.detach().cpu().numpy() if hasattr(v, "detach") else v)
                  for k, v in dict(data).items()}
        def write(tmp):
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
        return _publish(write, os.path.join(self.output_dir, f"{name}.npz"))

    def _common_args(self, options, model=None):
        if self._config is not None:
            options = dict(options, config=self._config)
        return [model or self._model] + to_args(options, native().flags())

    @property
    def _checkpoints(self):
        return self._options.get("checkpoint_dir") or os.path.join(self.output_dir, "checkpoints")

    @property
    def _saved_model(self):
        return self._options.get("save_model") or os.path.join(self.output_dir, "model")

    # -- running -----------------------------------------------------------
    def train(self, on_step=None):
        """Trains; returns a TrainResult. on_step(dict) sees every step too."""
        if self._data is None:
            raise TypeError("train() needs data (Trainer(model, data, ...))")
        o = self._options
        args = self._common_args(o) + [f"--data={self._data}"]
        if self._eval_data is not None:
            args.append(f"--eval-data={self._eval_data}")
        if "save_model" not in o:
            args.append(f"--save-model={self._saved_model}")
        if "checkpoint_dir" not in o:
            every = o.get("checkpoint_every") or o.get("steps") or _NEVER
            if o.get("eval_every") and every % o["eval_every"]:
                every += o["eval_every"] - every % o["eval_every"]
            args += [f"--checkpoint-dir={self._checkpoints}", f"--checkpoint-every={every}"]
            if "keep_last" not in o:
                args.append("--keep-last=1")
            if not o.get("resume"):
                args.append("--overwrite-checkpoints")
        steps = []

        def step(result):
            steps.append(result)
            self.log_history.append(result)
            for callback in self._callbacks + ([on_step] if on_step else []):
                callback(result)

        _run(args, step)
        self._trained = True
        losses = [s["loss"] for s in steps if s.get("applied")]
        metrics = {k: v for k, v in (steps[-1] if steps else {}).items() if k.startswith("eval_")}
        return TrainResult(global_step=steps[-1]["step"] if steps else 0,
                           training_loss=sum(losses) / len(losses) if losses else float("nan"),
                           metrics=metrics, steps=steps)

    def evaluate(self, eval_data=None):
        """Held-out loss (accuracy, perplexity where they apply) of the
        trained parameters (the model's own before train()): a dict."""
        return self._evaluate(eval_data, "evaluate()", self._model)

    def predict(self, data=None):
        """The model's outputs for every row of `data` (default: the eval
        data), with the trained parameters (the model's own before train()),
        and the rows' metrics: a PredictionOutput. A torch module's logits
        (exported once more with them when export_logits was not set); an
        .onnx model's outputs with one value per row."""
        folder = os.path.join(self.output_dir, "predictions")
        model = self._model
        if self._module is not None:   # the same parameters, with logits as an output
            model = os.path.join(self.output_dir, "predict.onnx")
            if not os.path.exists(model):
                export(self._module, self._example_inputs, model, logits=True)
        metrics = self._evaluate(data, "predict()", model, predictions=folder)
        step, outputs = read_predictions(folder)
        return PredictionOutput(outputs=outputs, metrics=metrics, step=step)

    def _evaluate(self, eval_data, what, model, **extra):
        data = self._data_path(eval_data, "eval") if eval_data is not None else self._eval_data
        if data is None:
            raise TypeError(f"{what} needs data (here or as the Trainer's eval_data)")
        kept = {k: v for k, v in self._options.items() if k not in _TRAINING_ONLY}
        args = self._common_args(dict(kept, **extra), model) + [f"--eval-data={data}"]
        if self._trained:
            args.append(f"--from-checkpoint={self._checkpoints}")
        results = []
        _run(args, results.append)
        return {k: v for k, v in (results[-1] if results else {}).items() if k.startswith("eval_")}

    def state_dict(self):
        """The trained parameters under the model's own names (no optimizer
        state): torch tensors for module.load_state_dict (numpy arrays
        without torch)."""
        path = os.path.join(self._saved_model, "model.safetensors")
        if not os.path.exists(path):
            raise Error(f"{path}: no trained model yet (call train() first)")
        try:
            from safetensors.torch import load_file
        except ImportError:
            from safetensors.numpy import load_file
        return load_file(path)

    def save_model(self, output_dir):
        """Copies the trained model folder (model.safetensors, config.json for
        a Hugging Face model: from_pretrained loads it) to output_dir."""
        if not os.path.isdir(self._saved_model):
            raise Error(f"{self._saved_model}: no trained model yet (call train() first)")
        shutil.copytree(self._saved_model, os.fspath(output_dir), dirs_exist_ok=True)
        return os.fspath(output_dir)
