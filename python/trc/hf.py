"""trc.hf.Trainer: a drop-in for transformers.Trainer's common path.

    from trc.hf import Trainer        # instead of: from transformers import Trainer
    trainer = Trainer(model=model, args=TrainingArguments(...), train_dataset=train,
                      eval_dataset=dev, data_collator=collator)
    trainer.train(); trainer.evaluate(); trainer.save_model()

How: the batches are transformers.Trainer's own (a transformers.Trainer is
built with the same arguments and only its data loaders are used: same
sampler, seed, collator, column removal, drop_last), drawn in the order its
training loop would draw them and written as rows, padded to one length
(input_ids with the pad token, attention_mask 0, token labels -100); the
model is exported with trc.export (its own loss: model(**batch).loss); and
trc.Trainer trains it with the TrainingArguments turned into trc-run flags
(TRAINING_FLAGS below). Then `state.log_history` is rebuilt as
transformers logs it (the mean loss of each logging window rounded to 4
digits, the learning rate the scheduler holds after the step, epoch,
step; eval entries; the final train_* summary), and save_model() writes the
Hugging Face folder (model.safetensors + config.json) from_pretrained loads.

compute_metrics sees what transformers passes it: an EvalPrediction of the
model's logits (after preprocess_logits_for_metrics, when given) and the
label_ids of every eval row; for it the model is exported with its logits
as a second output, trc-run writes them after each evaluation
(--predictions) and the metrics join the eval entries as eval_<name>.
predict() returns transformers' PredictionOutput (test_ metrics).

A TrainingArguments field this does not honour, set to other than its
default, is an error naming the field (never silently ignored); so are
constructor arguments it does not take (model_init, optimizers,
callbacks). Known differences: a batch shorter than the others
(the last of an epoch without dataloader_drop_last) is not trained (a line
on stderr says so); with dropout the random masks are trc's, not torch's.
The plan: `trc_config` ({"tensor_parallel_degree": 2, ...} or "auto"),
an argument of its own.
"""
import dataclasses
import math
import os
import sys
import time

from .trainer import Trainer as _TrcTrainer
from .trainer import read_predictions

# TrainingArguments fields turned into trc-run flags or honoured by using
# transformers' own data loaders.
HONOURED = {
    "output_dir", "overwrite_output_dir", "do_train", "do_eval", "do_predict",
    "evaluation_strategy", "eval_strategy", "eval_steps", "per_device_train_batch_size",
    "per_device_eval_batch_size", "gradient_accumulation_steps", "learning_rate",
    "weight_decay", "max_grad_norm", "num_train_epochs", "max_steps", "lr_scheduler_type",
    "warmup_ratio", "warmup_steps", "logging_strategy", "logging_steps", "logging_first_step",
    "save_strategy", "save_steps", "save_total_limit", "seed", "data_seed", "bf16", "fp16",
    "resume_from_checkpoint", "dataloader_drop_last", "dataloader_num_workers",
    "dataloader_pin_memory", "dataloader_persistent_workers", "remove_unused_columns",
    "label_names", "use_cpu", "no_cuda", "optim", "save_safetensors",
}
# Fields that only say how to report or where (nothing trained changes).
REPORTING = {
    "logging_dir", "log_level", "log_level_replica", "log_on_each_node", "logging_nan_inf_filter",
    "run_name", "disable_tqdm", "report_to", "skip_memory_metrics", "include_tokens_per_second",
    "include_num_input_tokens_seen", "local_rank", "_n_gpu", "save_on_each_node", "ddp_timeout",
    "ddp_backend", "dataloader_prefetch_factor",
}
SCHEDULES = {"linear": "linear", "cosine": "cosine", "constant": "constant",
             "constant_with_warmup": "constant"}
OPTIMIZERS = {"adamw_torch", "adamw_hf", "adamw_torch_fused"}


def _value(v):
    return getattr(v, "value", v)   # transformers' enums -> their strings


def check_arguments(args):
    """The first TrainingArguments field set to other than its default that
    trc.hf.Trainer does not honour, as a ValueError naming it."""
    import transformers
    defaults = transformers.TrainingArguments(output_dir=args.output_dir)
    for field in dataclasses.fields(args):
        name = field.name
        if name in HONOURED or name in REPORTING or not field.init:
            continue
        if _value(getattr(args, name)) != _value(getattr(defaults, name)):
            raise ValueError(f"TrainingArguments.{name}={getattr(args, name)!r}: trc.hf.Trainer "
                             f"does not support it (leave it at its default "
                             f"{getattr(defaults, name)!r}, or train with transformers.Trainer)")
    if _value(args.lr_scheduler_type) not in SCHEDULES:
        raise ValueError(f"TrainingArguments.lr_scheduler_type={_value(args.lr_scheduler_type)!r}: "
                         f"trc.hf.Trainer supports {', '.join(sorted(SCHEDULES))}")
    if _value(args.optim) not in OPTIMIZERS:
        raise ValueError(f"TrainingArguments.optim={_value(args.optim)!r}: trc.hf.Trainer trains "
                         f"with AdamW ({', '.join(sorted(OPTIMIZERS))})")


def _eval_strategy(args):
    return _value(getattr(args, "eval_strategy", None) or args.evaluation_strategy)


@dataclasses.dataclass
class TrainerState:
    """The part of transformers' TrainerState scripts read."""
    global_step: int = 0
    epoch: float = 0.0
    max_steps: int = 0
    log_history: list = dataclasses.field(default_factory=list)


class Trainer:
    """transformers.Trainer's constructor and its train/evaluate/save_model,
    trained by trc (see the module's text)."""

    def __init__(self, model=None, args=None, data_collator=None, train_dataset=None,
                 eval_dataset=None, tokenizer=None, model_init=None, compute_metrics=None,
                 callbacks=None, optimizers=(None, None), preprocess_logits_for_metrics=None,
                 *, trc_config=None):
        import transformers
        for name, value, default in (("model_init", model_init, None),
                                     ("callbacks", callbacks, None),
                                     ("optimizers", tuple(optimizers), (None, None))):
            if value != default:
                raise ValueError(f"{name}: trc.hf.Trainer does not take it yet")
        if model is None:
            raise ValueError("trc.hf.Trainer needs a model")
        args = args or transformers.TrainingArguments(output_dir="tmp_trainer")
        check_arguments(args)
        self.model, self.args, self.tokenizer = model, args, tokenizer
        self.train_dataset, self.eval_dataset = train_dataset, eval_dataset
        self.trc_config = trc_config
        self.compute_metrics = compute_metrics
        self.preprocess_logits_for_metrics = preprocess_logits_for_metrics
        self.state = TrainerState()
        if hasattr(model, "config") and hasattr(model.config, "use_cache"):
            model.config.use_cache = False   # training: no key/value cache among the outputs
        # transformers' own loaders: its sampler, seed and collator.
        self._hf = transformers.Trainer(model=model, args=args, data_collator=data_collator,
                                        train_dataset=train_dataset, eval_dataset=eval_dataset,
                                        tokenizer=tokenizer)
        self._pad = getattr(tokenizer, "pad_token_id", None) or 0
        self._trainer = None

    # -- data --------------------------------------------------------------
    def _batches(self, loader, count=None, what="train"):
        """`count` batches from `loader` (all of one pass when None), as
        transformers' loop draws them (epoch after epoch)."""
        batches, epoch = [], 0
        while count is None or len(batches) < count:
            if hasattr(loader, "set_epoch"):
                loader.set_epoch(epoch)
            for batch in loader:
                batches.append({k: v for k, v in batch.items() if hasattr(v, "shape")})
                if count is not None and len(batches) == count:
                    break
            epoch += 1
            if count is None:
                break
        if what == "eval":   # evaluation takes every row: batches only feed it rows
            return batches
        sizes = {len(next(iter(b.values()))) for b in batches}
        full = max(sizes)
        kept = [b for b in batches if len(next(iter(b.values()))) == full]
        if len(kept) < len(batches):
            print(f"trc.hf.Trainer: {len(batches) - len(kept)} {what} batch(es) shorter than "
                  f"{full} rows left out (set dataloader_drop_last=True to match)",
                  file=sys.stderr)
        return kept

    def _rows(self, batches):
        """The batches' rows, every array padded to the longest sequence."""
        import numpy as np
        names = list(batches[0])
        longest = {n: max(b[n].shape[1] for b in batches) if batches[0][n].dim() == 2 else None
                   for n in names}
        fill = {n: (-100 if n == "labels" else 0 if n in ("attention_mask", "token_type_ids")
                    else self._pad) for n in names}
        rows = {}
        for n in names:
            parts = []
            for b in batches:
                a = b[n].cpu().numpy()
                if longest[n] and a.shape[1] < longest[n]:
                    a = np.pad(a, ((0, 0), (0, longest[n] - a.shape[1])),
                               constant_values=fill[n])
                parts.append(a)
            rows[n] = np.concatenate(parts)
        return rows

    # -- the schedule --------------------------------------------------------
    def _plan(self, loader_len):
        a = self.args
        accum = a.gradient_accumulation_steps
        per_epoch = max(loader_len // accum, 1)
        steps = a.max_steps if a.max_steps > 0 else math.ceil(a.num_train_epochs * per_epoch)
        warmup = a.warmup_steps if a.warmup_steps > 0 else math.ceil(steps * a.warmup_ratio)
        kind = SCHEDULES[_value(a.lr_scheduler_type)]
        if _value(a.lr_scheduler_type) == "constant":
            warmup = 0
        keys = ([f"warmup={warmup}", "warmup_from=0"] if warmup else []) + \
            ([f"total={steps}"] if kind != "constant" else [])
        spec = kind + (":" + ",".join(keys) if keys else "")
        # The rate the scheduler holds after the last step (what transformers
        # logs there): the decays end at 0.
        self._final_lr = self.args.learning_rate if kind == "constant" else 0.0
        return steps, per_epoch, spec

    def _every(self, strategy, steps, per_epoch):
        """The interval in steps of a logging/eval/save strategy ('no': none)."""
        return {"steps": int(steps), "epoch": per_epoch}.get(strategy)

    def _options(self, steps, spec, world, per_epoch):
        a = self.args
        options = dict(batch_size=a.per_device_train_batch_size * world * a.gradient_accumulation_steps,
                       grad_accum=a.gradient_accumulation_steps, steps=steps, lr=a.learning_rate,
                       lr_schedule=spec, optimizer="adamw", weight_decay=a.weight_decay,
                       seed=a.seed, log_every=max(a.logging_steps, 1))
        if a.max_grad_norm and a.max_grad_norm > 0:
            options["clip_grad_norm"] = a.max_grad_norm
        options["precision"] = "bf16" if a.bf16 else "fp16" if a.fp16 else "fp32"
        if a.use_cpu or getattr(a, "no_cuda", False):
            options["device"] = "cpu"
        eval_every = self._every(_eval_strategy(a), a.eval_steps or a.logging_steps, per_epoch)
        if eval_every and self.eval_dataset is not None:
            options["eval_every"] = eval_every
        save_every = self._every(_value(a.save_strategy), a.save_steps, per_epoch)
        if save_every:
            options["checkpoint_dir"] = os.path.join(a.output_dir, "trc-checkpoints")
            options["checkpoint_every"] = save_every
            if options.get("eval_every") and options["checkpoint_every"] % options["eval_every"]:
                options["checkpoint_every"] += (options["eval_every"] -
                                                options["checkpoint_every"] % options["eval_every"])
            if a.save_total_limit:
                options["keep_last"] = a.save_total_limit
        return options

    # -- the API -------------------------------------------------------------
    def train(self, resume_from_checkpoint=None, **unsupported):
        """Trains; returns transformers' TrainOutput."""
        from transformers.trainer_utils import TrainOutput
        if unsupported:
            raise ValueError(f"train({', '.join(unsupported)}): trc.hf.Trainer does not take it")
        a = self.args
        world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("SLURM_NTASKS", "1")))
        loader = self._hf.get_train_dataloader()
        steps, per_epoch, spec = self._plan(len(loader))
        accum = a.gradient_accumulation_steps
        train_rows = self._rows(self._batches(loader, steps * accum))
        example = {k: _tensor(v[:2]) for k, v in train_rows.items()}
        options = self._options(steps, spec, world, per_epoch)
        options["steps"] = min(steps, len(next(iter(train_rows.values()))) // options["batch_size"])
        resume = resume_from_checkpoint or a.resume_from_checkpoint
        if resume:
            options["resume"] = True
        eval_rows = None
        if self.eval_dataset is not None and options.get("eval_every"):
            eval_rows = self._rows(self._batches(self._hf.get_eval_dataloader(), what="eval"))
        os.makedirs(a.output_dir, exist_ok=True)
        predictions = os.path.join(a.output_dir, "trc", "eval-predictions")
        measured = self.compute_metrics is not None and eval_rows is not None
        if measured:
            options["predictions"] = predictions
        self._trainer = _TrcTrainer(self.model, train_rows, eval_data=eval_rows,
                                    config=self.trc_config, example_inputs=example,
                                    export_logits=self.compute_metrics is not None,
                                    output_dir=os.path.join(a.output_dir, "trc"), **options)

        def with_metrics(step):   # trc-run wrote this evaluation's logits before the step's report
            if measured and "eval_loss" in step:
                _, outputs = read_predictions(predictions)
                for key in [k for k in step if k.startswith("eval_") and k != "eval_loss"]:
                    del step[key]   # compute_metrics' metrics, not trc's own
                step.update(self._measure(outputs, eval_rows, "eval"))

        start = time.time()
        result = self._trainer.train(on_step=with_metrics)
        runtime = time.time() - start
        self._log(result.steps, per_epoch, runtime, options["batch_size"])
        self.state.max_steps = steps
        return TrainOutput(self.state.global_step, result.training_loss,
                           self.state.log_history[-1].copy())

    def _log(self, steps, per_epoch, runtime, batch):
        """transformers' log_history from trc's steps."""
        a = self.args
        history, window = [], []
        every = self._every(_value(a.logging_strategy), a.logging_steps, per_epoch) or 0
        for i, s in enumerate(steps):
            window.append(s["loss"])
            epoch = round(s["step"] / per_epoch, 2)
            if every and (s["step"] % every == 0 or (a.logging_first_step and s["step"] == 1)):
                lr = steps[i + 1]["learning_rate"] if i + 1 < len(steps) else self._final_lr
                history.append({"loss": round(sum(window) / len(window), 4), "learning_rate": lr,
                                "epoch": epoch, "step": s["step"]})
                window = []
            if "eval_loss" in s:
                entry = {k: v for k, v in s.items() if k.startswith("eval_")}
                history.append(dict(entry, epoch=epoch, step=s["step"]))
        last = steps[-1]["step"] if steps else 0
        losses = [s["loss"] for s in steps]
        history.append({"train_runtime": round(runtime, 4),
                        "train_samples_per_second": round(last * batch / runtime, 3),
                        "train_steps_per_second": round(last / runtime, 3),
                        "train_loss": sum(losses) / len(losses) if losses else float("nan"),
                        "epoch": round(last / per_epoch, 2), "step": last})
        self.state.log_history.extend(history)
        self.state.global_step = last
        self.state.epoch = last / per_epoch

    def evaluate(self, eval_dataset=None, ignore_keys=None, metric_key_prefix="eval",
                 **unsupported):
        """eval_loss (eval_accuracy for a model with logits; compute_metrics'
        metrics when given) of the trained model on eval_dataset (default:
        the constructor's), named with metric_key_prefix."""
        if unsupported:
            raise ValueError(f"evaluate({', '.join(unsupported)}): trc.hf.Trainer does not take it")
        rows, start = self._eval_rows(eval_dataset, "evaluate()"), time.time()
        if self.compute_metrics is None:
            metrics = _renamed(self._trainer.evaluate(rows), metric_key_prefix)
        else:
            prediction = self._trainer.predict(rows)
            metrics = self._measure(prediction.outputs, rows, metric_key_prefix,
                                    prediction.metrics)
        metrics.update(self._timing(metric_key_prefix, time.time() - start, rows))
        self.state.log_history.append(dict(metrics, step=self.state.global_step))
        return metrics

    def predict(self, test_dataset, ignore_keys=None, metric_key_prefix="test"):
        """transformers' PredictionOutput: the model's logits for every row
        of test_dataset (after preprocess_logits_for_metrics), their
        label_ids, and the metrics (loss, compute_metrics') as test_*."""
        from transformers.trainer_utils import PredictionOutput
        rows, start = self._eval_rows(test_dataset, "predict()"), time.time()
        prediction = self._trainer.predict(rows)
        logits = prediction.predictions
        labels = rows.get(self._label_name())
        if self.preprocess_logits_for_metrics is not None:
            logits = self._preprocessed(logits, labels)
        if self.compute_metrics is None:
            metrics = _renamed(prediction.metrics, metric_key_prefix)
        else:
            metrics = self._measure(prediction.outputs, rows, metric_key_prefix,
                                    prediction.metrics)
        metrics.update(self._timing(metric_key_prefix, time.time() - start, rows))
        return PredictionOutput(predictions=logits, label_ids=labels, metrics=metrics)

    # -- metrics -------------------------------------------------------------
    def _eval_rows(self, dataset, what):
        dataset = dataset if dataset is not None else self.eval_dataset
        if dataset is None:
            raise ValueError(f"{what} needs a dataset (or the constructor's eval_dataset)")
        if self._trainer is None:
            raise ValueError(f"{what} after train(): trc evaluates the parameters it trained")
        return self._rows(self._batches(self._hf.get_eval_dataloader(dataset), what="eval"))

    def _label_name(self):
        names = self.args.label_names or ["labels"]
        return names[0]

    def _preprocessed(self, logits, labels):
        import torch
        out = self.preprocess_logits_for_metrics(
            torch.from_numpy(logits), None if labels is None else torch.from_numpy(labels))
        return out.detach().cpu().numpy() if hasattr(out, "detach") else out

    def _measure(self, outputs, rows, prefix, trc_metrics=None):
        """{prefix}_loss (trc's) and compute_metrics' metrics of `outputs`
        (the logits of `rows`), named as transformers names them."""
        from transformers import EvalPrediction
        logits = next(iter(outputs.values()))
        labels = rows.get(self._label_name())
        if self.preprocess_logits_for_metrics is not None:
            logits = self._preprocessed(logits, labels)
        measured = self.compute_metrics(EvalPrediction(predictions=logits, label_ids=labels))
        metrics = {}
        if trc_metrics is not None:
            metrics[f"{prefix}_loss"] = trc_metrics["eval_loss"]
        for key, value in measured.items():
            metrics[key if key.startswith(f"{prefix}_") else f"{prefix}_{key}"] = value
        return metrics

    def _timing(self, prefix, seconds, rows):
        count = len(next(iter(rows.values())))
        return {f"{prefix}_runtime": round(seconds, 4),
                f"{prefix}_samples_per_second": round(count / seconds, 3), "epoch": self.state.epoch}

    def save_model(self, output_dir=None):
        """The Hugging Face folder (model.safetensors, config.json, and the
        tokenizer's files when one was given) that from_pretrained loads."""
        output_dir = output_dir or self.args.output_dir
        if self._trainer is None:
            self.model.save_pretrained(output_dir, safe_serialization=True)
        else:
            self._trainer.save_model(output_dir)
        if self.tokenizer is not None:
            self.tokenizer.save_pretrained(output_dir)


def _renamed(metrics, prefix):
    """trc's eval_* metrics under transformers' metric_key_prefix."""
    return {f"{prefix}_{k[len('eval_'):]}": v for k, v in metrics.items()}


def _tensor(array):
    import torch
    return torch.from_numpy(array)
