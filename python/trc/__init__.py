"""trc from Python: export a PyTorch module, compile its training step,
train it, and get the trained weights back under the module's own names.

    import trc
    path = trc.export(model, {"input_ids": ids, "labels": ids}, "m.onnx")
    trainer = trc.Trainer(path, data="rows.npz", batch_size=8, steps=100, lr=3e-4)
    trainer.train()
    model.load_state_dict(trainer.state_dict())

trc.Trainer runs trc-run's own training path in this process (the same
flags, checks and errors: every keyword argument is a trc-run flag, with
'_' for '-'); under mpirun each rank's Python process calls train().

The package has two halves: these Python files (python/trc) and the
compiled extension trc._trc (build/python/trc). scripts/build.sh puts both
folders on the project's .venv path; extend_path below joins them. Nothing
here imports torch or the extension until it is used.
"""
import pkgutil

__path__ = pkgutil.extend_path(__path__, __name__)

from .trainer import (CompiledStep, Error, PredictionOutput, Trainer, TrainResult,  # noqa: E402
                      compile, export)

__all__ = ["CompiledStep", "Error", "PredictionOutput", "Trainer", "TrainResult", "compile",
           "export"]
