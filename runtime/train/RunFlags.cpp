//===- RunFlags.cpp - trc-run's flags, declared once (RunFlags.h) ---------===//
#include "runtime/train/RunFlags.h"

#include "runtime/support/Parse.h"

namespace trc::rt {
namespace {

using A = FlagArity;
using M = RunMode;

constexpr bool kOnce = false, kRepeatable = true;
constexpr bool kSelects = true, kQualifies = false;

// The table. Help is plain text; runUsage wraps it.
const std::vector<RunFlag> kFlags = {
    // Evaluation: run an artifact (or an .onnx model) once.
    {"--input", "NAME=FILE", A::Value, M::Evaluation, kRepeatable, kSelects,
     "bind input NAME to a NumPy .npy file (dtype and shape must match the artifact exactly)"},
    {"--output-dir", "DIR", A::Value, M::Evaluation, kOnce, kSelects,
     "where the outputs are written (created if needed)"},
    {"--repeat", "N", A::Value, M::Evaluation, kOnce, kSelects,
     "after the first run, time N more and print the mean and best time per run to stderr"},
    {"--device", "D", A::Value, M::Shared, kOnce, kSelects,
     "cpu, cuda, or auto (default: an artifact's own target; for an .onnx model the GPU when "
     "present, else the CPU)"},
    {"--profile-summary", "", A::Switch, M::Shared, kOnce, kSelects,
     "where the time went: with --repeat, per compiled loop nest and BLAS call (CPU); in "
     "training, rank 0 prints per rank the top consumers and the compute / communication / "
     "host / idle shares"},
    {"--help", "", A::Switch, M::Shared, kOnce, kSelects, "print this help (also -h)"},

    // Training: the data and the loop.
    {"--data", "FILE", A::Value, M::Training, kOnce, kSelects,
     "training data: a text file (byte tokens, with --seq-len T), labelled rows in an .npz "
     "(arrays named after the model's inputs, one row per example) or a folder of NAME.npy "
     "files"},
    {"--batch-size", "B", A::Value, M::Training, kOnce, kSelects, "rows per step"},
    {"--seq-len", "T", A::Value, M::Training, kOnce, kSelects, "tokens per row of text data"},
    {"--steps", "N", A::Value, M::Training, kOnce, kSelects,
     "optimizer steps (with --epochs, at most N)"},
    {"--epochs", "E", A::Value, M::Training, kOnce, kSelects, "E passes over --data"},
    {"--eval-data", "ROWS.npz|TEXT", A::Value, M::Training, kOnce, kSelects,
     "held-out loss (and accuracy for a model with logits; per token and perplexity for token "
     "data) every --eval-every steps and at the end; without --data, evaluation alone of the "
     "model's parameters or --from-checkpoint's"},
    {"--eval-every", "K", A::Value, M::Training, kOnce, kSelects, "evaluate every K steps"},
    {"--predictions", "DIR", A::Value, M::Training, kOnce, kSelects,
     "with --eval-data: after each evaluation, the model's outputs for every eval row "
     "(logits...) as DIR/<output>.npy in row order, with DIR/predictions.json"},
    {"--from-checkpoint", "D", A::Value, M::Training, kOnce, kSelects,
     "evaluation alone: a checkpoint's parameters (a step-<N> folder or D/latest)"},
    {"--log-every", "N", A::Value, M::Training, kOnce, kSelects,
     "when stderr is not a terminal: a step line every N steps (default 10)"},
    {"--shuffle", "", A::Switch, M::Training, kOnce, kSelects,
     "visit the rows in a seeded random order each epoch"},
    {"--seed", "S", A::Value, M::Training, kOnce, kSelects,
     "seeds the shuffle, dropout and --init-weights"},
    {"--feed", "NAME=inputs|targets|labels", A::Value, M::Training, kRepeatable, kSelects,
     "what feeds the model's input NAME (default: from the input's name and type)"},
    {"--metrics", "FILE.jsonl", A::Value, M::Training, kOnce, kSelects,
     "one JSON line of metrics per step (rank 0)"},
    {"--tensorboard", "DIR", A::Value, M::Training, kOnce, kSelects,
     "the step metrics as TensorBoard scalars: train/loss, train/learning_rate, ..., eval/loss "
     "(rank 0)"},

    // Training: the optimizer and the loss.
    {"--optimizer", "adamw|adam|sgd", A::Value, M::Training, kOnce, kSelects,
     "the optimizer (default adamw)"},
    {"--lr", "R", A::Value, M::Training, kOnce, kSelects, "the learning rate"},
    {"--lr-schedule", "SPEC", A::Value, M::Training, kOnce, kSelects,
     "how the learning rate changes over the steps (see README)"},
    {"--momentum", "M", A::Value, M::Training, kOnce, kSelects, "SGD's momentum"},
    {"--nesterov", "", A::Switch, M::Training, kOnce, kSelects, "SGD with Nesterov momentum"},
    {"--weight-decay", "W", A::Value, M::Training, kOnce, kSelects, "decoupled weight decay"},
    {"--clip-grad-norm", "C", A::Value, M::Training, kOnce, kSelects,
     "scale the gradients down to global norm C"},
    {"--loss", "cross_entropy", A::Value, M::Training, kOnce, kSelects,
     "the loss of a model that outputs logits"},
    {"--ignore-index", "I", A::Value, M::Training, kOnce, kSelects,
     "the label --loss cross_entropy skips"},
    {"--on-nonfinite", "stop|skip", A::Value, M::Training, kOnce, kSelects,
     "a step whose loss or gradient norm is inf/NaN: stop with an error (the default) or "
     "discard its update and go on, at most 10 in a row; fp16 overflows are the loss scaler's "
     "skips either way"},
    {"--detect-anomaly", "", A::Switch, M::Training, kOnce, kSelects,
     "every value of the step is checked for NaN/inf; a non-finite step's error names the op "
     "that first made one (same results, slower steps and compile)"},

    // Training: what is compiled.
    {"--precision", "auto|fp32|bf16|fp16", A::Value, M::Training, kOnce, kSelects,
     "bf16/fp16: 16-bit compute with fp32 master weights; auto, the default: bf16 on cuda, "
     "fp32 on cpu"},
    {"--loss-scale", "S", A::Value, M::Training, kOnce, kSelects,
     "the initial loss scale of --precision fp16"},
    {"--grad-accum", "K", A::Value, M::Training, kOnce, kSelects,
     "accumulate the gradients of K microbatches per step"},
    {"--attention", "auto|fused|unfused", A::Value, M::Training, kOnce, kSelects,
     "fused: attention is one op whose backward recomputes the probabilities instead of "
     "keeping them; auto, the default: fused on cuda"},
    {"--recompute", "none|selective|full|auto", A::Value, M::Training, kOnce, kSelects,
     "activations recomputed in the backward instead of kept: selective, the attention core; "
     "full, every layer from its input; auto, the least recomputation whose arena fits "
     "--memory-budget, or the device"},
    {"--memory-budget", "BYTES", A::Value, M::Training, kOnce, kSelects,
     "the arena --recompute auto must fit"},
    {"--init-weights", "", A::Switch, M::Training, kOnce, kSelects,
     "start from fresh values drawn like the model's own (each trainable weight's constant, "
     "normal or uniform recipe, seeded by --seed; see docs/ARTIFACT.md)"},
    {"--freeze", "REGEX", A::Value, M::Training, kRepeatable, kSelects,
     "float initializers matching REGEX are frozen (after --trainable; then the exporter's tags "
     "decide: torch 2.x PARAMETERs train; see README \"Bring your own model\")"},
    {"--trainable", "REGEX", A::Value, M::Training, kRepeatable, kSelects,
     "float initializers matching REGEX train"},
    {"--config", "JSON|FILE.json|auto", A::Value, M::Training, kOnce, kSelects,
     "the parallel plan (launch with mpirun or srun): ddp, zero_stage, shard_optimizer_state, "
     "sharded_data_parallel_degree, hybrid_shard_degree, bucket_cap_mb, communicator, "
     "tensor_parallel_degree, sequence_parallel, context_parallel_degree, cp_comm_type, "
     "pipeline_parallel_degree, microbatches, "
     "pipeline_schedule, recompute, offload_activations, activation_loading_horizon; auto: the "
     "planner's choice (see README \"Planning\")"},
    {"--device-profile", "PROFILE.json", A::Value, M::Training, kOnce, kSelects,
     "what --config auto plans with, from --calibrate (default: the cpu spec sheet)"},

    // Training: checkpoints and signals.
    {"--checkpoint-dir", "D", A::Value, M::Training, kOnce, kSelects,
     "where checkpoints are written"},
    {"--checkpoint-every", "K", A::Value, M::Training, kOnce, kSelects,
     "a checkpoint every K steps"},
    {"--resume", "auto", A::SwitchOrAuto, M::Training, kOnce, kSelects,
     "continue from --checkpoint-dir's latest checkpoint (auto: when there is one)"},
    {"--overwrite-checkpoints", "", A::Switch, M::Training, kOnce, kSelects,
     "start afresh in a --checkpoint-dir that holds checkpoints"},
    {"--checkpoint-sync", "", A::Switch, M::Training, kOnce, kSelects,
     "wait for each checkpoint (they are written in the background while training goes on)"},
    {"--keep-last", "K", A::Value, M::Training, kOnce, kSelects,
     "keep the K newest checkpoints, removing older ones after each save (default: all)"},
    {"--keep-best", "eval_loss|eval_perplexity|eval_accuracy", A::Value, M::Training, kOnce,
     kSelects,
     "D/best names the checkpoint evaluated best, kept whatever --keep-last says (needs "
     "--eval-data and --eval-every)"},
    {"--signal-grace", "S", A::Value, M::Training, kOnce, kSelects,
     "SIGTERM, SIGINT or SIGUSR1 stop the run after the step in flight, with a checkpoint of it "
     "in --checkpoint-dir, exit 1; the process ends anyway S seconds after the signal (default "
     "25, 0: no bound)"},

    // Training: what is written at the end, and profiles.
    {"--export-onnx", "OUT.onnx", A::Value, M::Training, kOnce, kQualifies,
     "after training: MODEL.onnx with the trained weights, for onnxruntime and other runtimes"},
    {"--save-model", "DIR", A::Value, M::Training, kOnce, kSelects,
     "after training: the trained parameters under the model's own names, DIR/model.safetensors, "
     "and for a Hugging Face export config.json (from_pretrained(DIR))"},
    {"--save-artifact", "DIR", A::Value, M::Training, kOnce, kSelects,
     "compile the step for --device cpu|cuda, keep it in DIR and stop (--data and --steps "
     "optional)"},
    {"--profile", "FILE.json", A::Value, M::Training, kOnce, kSelects,
     "each rank's timeline (steps, phases, program runs, collectives); rank 0 writes one "
     "Chrome-trace file for ui.perfetto.dev or chrome://tracing"},
    {"--profile-steps", "N", A::Value, M::Training, kOnce, kSelects,
     "record the last N steps only (default: every step, the warm-up one included)"},

    // Calibration: the planner's device profile.
    {"--calibrate", "", A::Switch, M::Calibration, kOnce, kSelects,
     "time matrix products, compiled kernels and (under mpirun -np N, N > 1) MPI collectives"},
    {"--calibrate-out", "PROFILE.json", A::Value, M::Calibration, kOnce, kQualifies,
     "write or update PROFILE.json's entry for this many ranks (default: stdout)"},
};

constexpr size_t kWidth = 80, kHelpColumn = 26;

/// "  --name VALUE" then the help, wrapped at kWidth from kHelpColumn.
void appendFlag(std::string &out, const RunFlag &f) {
  std::string line = "  " + std::string(f.name);
  if (f.arity == FlagArity::Value)
    line += " " + std::string(f.valueName);
  else if (f.arity == FlagArity::SwitchOrAuto)
    line += " [" + std::string(f.valueName) + "]";
  if (line.size() + 2 > kHelpColumn) {
    out += line + "\n";
    line.clear();
  }
  line.resize(kHelpColumn, ' ');
  bool lineEmpty = true;
  for (std::string_view word : splitText(f.help, ' ')) {
    if (word.empty())
      continue;
    if (!lineEmpty && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line.assign(kHelpColumn, ' ');
      lineEmpty = true;
    }
    if (!lineEmpty)
      line += ' ';
    line += word;
    lineEmpty = false;
  }
  out += line + "\n";
}

void appendFlags(std::string &out, RunMode mode) {
  for (const RunFlag &f : kFlags)
    if (f.mode == mode)
      appendFlag(out, f);
}

} // namespace

const std::vector<RunFlag> &runFlags() { return kFlags; }

const RunFlag *findRunFlag(std::string_view name) {
  for (const RunFlag &f : kFlags)
    if (f.name == name)
      return &f;
  return nullptr;
}

std::string runUsage() {
  std::string out =
      "usage: trc-run ARTIFACT_DIR [--device cpu|cuda|auto] --input NAME=FILE.npy ...\n"
      "               --output-dir DIR\n"
      "       trc-run MODEL.onnx|STEP_DIR --data FILE --batch-size B [--seq-len T]\n"
      "               --steps N ...\n"
      "       trc-run MODEL.onnx --eval-data ROWS.npz|TEXT --batch-size B ...\n"
      "       [mpirun -np N] trc-run --calibrate [--calibrate-out PROFILE.json]\n"
      "\n"
      "Evaluation runs a compiled trc artifact (a folder written by\n"
      "`trc-opt MODEL --trc-compile=\"target=cpu\" -o ARTIFACT_DIR`, or an .onnx model,\n"
      "compiled in-process) once and writes DIR/<output>.npy for each of its outputs.\n"
      "Training compiles MODEL.onnx into a training step and trains it (see README),\n"
      "or trains a step saved with --save-artifact without compiling: its batch\n"
      "shape, plan and compile-time flags are the step's. Flags take their value as\n"
      "the next argument or after '='.\n"
      "\n"
      "Every mode:\n";
  appendFlags(out, RunMode::Shared);
  out += "\nEvaluation:\n";
  appendFlags(out, RunMode::Evaluation);
  out += "\nTraining:\n";
  appendFlags(out, RunMode::Training);
  out += "\nCalibration (the planner's device profile; see README \"Planning\"):\n";
  appendFlags(out, RunMode::Calibration);
  return out;
}

} // namespace trc::rt
