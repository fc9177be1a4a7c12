//===- Train.cpp - trc-run's training loop -----------------------------------===//
#include "Train.h"

#include "CompileInProcess.h"
#include "ExportOnnx.h"
#include "RunHelpers.h"
#include "trc/Import/OnnxImporter.h"

#include "runtime/Artifact.h"
#include "runtime/Backend.h"
#include "runtime/Checkpoint.h"
#include "runtime/DataLoader.h"
#include "runtime/LrSchedule.h"
#include "runtime/Metrics.h"
#include "runtime/Names.h"
#include "runtime/Session.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

using namespace trc::rt;

namespace trc {
namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

bool parseInt(const std::string &text, int64_t lo, int64_t &out) {
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || v < lo)
    return false;
  out = v;
  return true;
}

bool parseFloat(const std::string &text, double &out) {
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(out);
}

/// The validated settings of a run.
struct Run {
  int64_t batch = 0, seq = 0, steps = 0, seed = 0, checkpointEvery = 0;
  std::string data, metrics, checkpointDir, optimizer = "adamw";
  std::string inputsName, targetsName;
  LrSchedule schedule;
  std::string trainStepOptions;
};

std::string valueOr(const TrainArgs &a, const std::string &flag, const std::string &d) {
  auto it = a.values.find(flag);
  return it == a.values.end() ? d : it->second;
}

int configure(const TrainArgs &a, Run &run) {
  for (const char *required : {"--data", "--batch-size", "--seq-len", "--steps"})
    if (!a.values.count(required))
      return fail(std::string("training needs ") + required);
  auto positive = [&](const char *flag, int64_t &out) {
    if (!parseInt(a.values.at(flag), 1, out))
      return fail(std::string("option '") + flag + "' expects a positive integer, got '" +
                  a.values.at(flag) + "'") == 0;
    return true;
  };
  if (!positive("--batch-size", run.batch) || !positive("--seq-len", run.seq) ||
      !positive("--steps", run.steps))
    return 1;
  run.data = a.values.at("--data");
  run.metrics = valueOr(a, "--metrics", "");
  run.checkpointDir = valueOr(a, "--checkpoint-dir", "");
  if (a.values.count("--checkpoint-every") &&
      !parseInt(a.values.at("--checkpoint-every"), 1, run.checkpointEvery))
    return fail("option '--checkpoint-every' expects a positive integer");
  if (run.checkpointEvery && run.checkpointDir.empty())
    return fail("--checkpoint-every needs --checkpoint-dir");
  if (a.resume && run.checkpointDir.empty())
    return fail("--resume needs --checkpoint-dir");
  if (!parseInt(valueOr(a, "--seed", "0"), 0, run.seed))
    return fail("option '--seed' expects a non-negative integer");
  run.optimizer = valueOr(a, "--optimizer", "adamw");
  if (run.optimizer != "adamw" && run.optimizer != "adam" && run.optimizer != "sgd")
    return fail("option '--optimizer' expects adamw, adam or sgd, got '" + run.optimizer +
                "'");
  double lr;
  if (!parseFloat(valueOr(a, "--lr", "1e-3"), lr) || lr <= 0)
    return fail("option '--lr' expects a positive number");
  if (Status s = parseLrSchedule(valueOr(a, "--lr-schedule", "constant"), lr, run.steps,
                                 run.schedule);
      !s)
    return fail("--lr-schedule: " + s.message());
  std::string options = "optimizer=" + run.optimizer;
  for (const auto &[flag, key] : {std::pair<const char *, const char *>{"--momentum", "momentum"},
                                  {"--weight-decay", "weight-decay"},
                                  {"--clip-grad-norm", "clip-norm"}}) {
    if (!a.values.count(flag))
      continue;
    double v;
    if (!parseFloat(a.values.at(flag), v) || v < 0)
      return fail(std::string("option '") + flag + "' expects a non-negative number");
    options += std::string(" ") + key + "=" + a.values.at(flag);
  }
  if (a.nesterov)
    options += " nesterov=true";
  run.trainStepOptions = options;
  return 0;
}

/// Which graph inputs take the batch's inputs and targets: --feed, else the
/// first two integer inputs.
int chooseFeeds(const TrainArgs &a, Run &run) {
  std::vector<GraphInputInfo> inputs;
  std::string error;
  if (!listGraphInputs(a.model, inputs, error))
    return fail(error);
  for (const auto &feed : a.feeds) {
    auto eq = feed.find('=');
    std::string name = feed.substr(0, eq), role = eq == std::string::npos ? "" : feed.substr(eq + 1);
    bool known = false;
    for (const auto &in : inputs)
      known |= in.name == name;
    if (!known)
      return fail("--feed names '" + name + "', which is not a graph input of " + a.model);
    if (role == "inputs")
      run.inputsName = name;
    else if (role == "targets")
      run.targetsName = name;
    else
      return fail("--feed expects NAME=inputs or NAME=targets, got '" + feed + "'");
  }
  for (const auto &in : inputs) {
    if (!in.isInteger || in.name == run.inputsName || in.name == run.targetsName)
      continue;
    if (run.inputsName.empty())
      run.inputsName = in.name;
    else if (run.targetsName.empty())
      run.targetsName = in.name;
  }
  if (run.inputsName.empty() || run.targetsName.empty())
    return fail(a.model + ": needs two integer graph inputs (token ids and targets); name "
                          "them with --feed NAME=inputs --feed NAME=targets");
  return 0;
}

/// Names of the slots a checkpoint holds: parameters and optimizer state.
std::vector<const Slot *> stateSlots(const Manifest &m) {
  std::vector<const Slot *> out;
  for (const Slot &s : m.slots) {
    bool isState = s.kind == SlotKind::Input && s.name.find(':') != std::string::npos;
    if (s.kind == SlotKind::Param || isState)
      out.push_back(&s);
  }
  return out;
}

/// Reads a param or state slot's current value.
Status readState(Session &session, const Slot &slot, HostTensor &out) {
  if (slot.kind == SlotKind::Param)
    return session.getParam(slot.name, out);
  return session.getOutput("update:" + slot.name, out);
}

Status writeState(Session &session, const Slot &slot, const HostTensor &value) {
  if (slot.kind == SlotKind::Param)
    return session.setParam(slot.name, value);
  return session.setInput(slot.name, value);
}

std::map<std::string, std::string> runConfig(const Run &run) {
  return {{"batch_size", std::to_string(run.batch)},
          {"seq_len", std::to_string(run.seq)},
          {"optimizer", run.trainStepOptions},
          {"lr_schedule", run.schedule.spec()},
          {"seed", std::to_string(run.seed)}};
}

} // namespace

int runTraining(const TrainArgs &a) {
  Run run;
  if (int rc = configure(a, run))
    return rc;
  std::unique_ptr<Backend> backend;
  if (Status s = createBackend(a.device, backend); !s)
    return fail(s.message());
  if (int rc = chooseFeeds(a, run))
    return rc;

  DataLoaderOptions dataOptions;
  dataOptions.batchSize = run.batch;
  dataOptions.seqLen = run.seq;
  dataOptions.shuffle = a.shuffle;
  dataOptions.seed = static_cast<uint64_t>(run.seed);
  std::unique_ptr<DataLoader> data;
  if (Status s = DataLoader::open(run.data, dataOptions, data); !s)
    return fail(s.message());

  std::string artifactDir, error;
  std::map<std::string, std::vector<int64_t>> shapes{{run.inputsName, {run.batch, run.seq}},
                                                     {run.targetsName, {run.batch, run.seq}}};
  if (!compileOnnxForTraining(a.model, shapes, run.trainStepOptions, backend->target(),
                              artifactDir, error)) {
    std::fputs(error.c_str(), stderr);
    return 1;
  }
  RemoveTemporaryArtifact removeTemporary{artifactDir};

  std::unique_ptr<Artifact> artifact;
  std::unique_ptr<Session> session;
  if (Status s = openSession(artifactDir, *backend, artifact, session); !s)
    return fail(s.message());
  const Manifest &manifest = artifact->manifest();

  // Optimizer state starts at zero; a resumed run loads it all back.
  auto slots = stateSlots(manifest);
  for (const Slot *slot : slots)
    if (slot->kind == SlotKind::Input) {
      HostTensor zeros;
      if (Status s = zeros.allocate(slot->dtype, slot->shape); !s)
        return fail(s.message());
      if (Status s = session->setInput(slot->name, zeros); !s)
        return fail(s.message());
    }
  int64_t firstStep = 0;
  if (a.resume) {
    std::string folder;
    if (Status s = latestCheckpoint(run.checkpointDir, folder); !s)
      return fail(s.message());
    CheckpointState state;
    std::vector<NamedTensor> tensors;
    if (Status s = readCheckpoint(folder, state, tensors); !s)
      return fail(s.message());
    if (Status s = checkCheckpointConfig(folder, state, runConfig(run)); !s)
      return fail(s.message());
    for (const Slot *slot : slots) {
      const NamedTensor *found = nullptr;
      for (const auto &t : tensors)
        if (t.name == slot->name)
          found = &t;
      if (!found)
        return fail(folder + ": the checkpoint has no tensor '" + percentEncode(slot->name) +
                    "'");
      if (Status s = writeState(*session, *slot, found->tensor); !s)
        return fail(folder + ": " + s.message());
    }
    if (Status s = data->restore(state.data); !s)
      return fail(s.message());
    firstStep = state.step;
  }

  std::unique_ptr<MetricsWriter> metrics;
  if (!run.metrics.empty()) {
    Status s = a.resume ? MetricsWriter::resume(run.metrics, firstStep, metrics)
                        : MetricsWriter::create(run.metrics, metrics);
    if (!s)
      return fail(s.message());
  }
  HostTensor inputs, targets, lr, stepCount, loss, norm;
  if (Status s = inputs.allocate(DType::I64, {run.batch, run.seq}); !s)
    return fail(s.message());
  if (Status s = targets.allocate(DType::I64, {run.batch, run.seq}); !s)
    return fail(s.message());
  (void)lr.allocate(DType::F32, {});
  (void)stepCount.allocate(DType::F32, {});
  ProgressBar progress(run.steps, firstStep);

  for (int64_t step = firstStep; step < run.steps; ++step) {
    auto start = std::chrono::steady_clock::now();
    if (Status s = data->next(static_cast<int64_t *>(inputs.data()),
                              static_cast<int64_t *>(targets.data()));
        !s)
      return fail(s.message());
    double rate = run.schedule.at(step);
    *static_cast<float *>(lr.data()) = static_cast<float>(rate);
    *static_cast<float *>(stepCount.data()) = static_cast<float>(step + 1);
    for (auto [name, value] : {std::pair<std::string, HostTensor *>{run.inputsName, &inputs},
                               {run.targetsName, &targets},
                               {"trc.lr", &lr},
                               {"trc.step", &stepCount}})
      if (Status s = session->setInput(name, *value); !s)
        return fail(s.message());
    if (Status s = session->run(); !s)
      return fail(s.message());
    if (Status s = session->applyUpdates(); !s)
      return fail(s.message());
    if (Status s = session->getOutput("loss", loss); !s)
      return fail(s.message());
    if (Status s = session->getOutput("grad_norm", norm); !s)
      return fail(s.message());
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() -
                                                          start)
                    .count();
    double lossValue = *static_cast<float *>(loss.data());
    double tokensPerSecond = double(run.batch * run.seq) / (ms / 1000.0);
    if (metrics) {
      StepMetrics m;
      m.step = step + 1;
      m.loss = MetricValue(*static_cast<float *>(loss.data()));
      m.learningRate = MetricValue(rate);
      m.gradNorm = MetricValue(*static_cast<float *>(norm.data()));
      m.tokensPerSecond = MetricValue(tokensPerSecond);
      m.stepTimeMs = MetricValue(ms);
      if (Status s = metrics->write(m); !s)
        return fail(s.message());
    }
    progress.update(step + 1, lossValue, tokensPerSecond);

    bool last = step + 1 == run.steps;
    if (run.checkpointEvery && ((step + 1) % run.checkpointEvery == 0 || last)) {
      std::vector<HostTensor> values(slots.size());
      std::vector<SafetensorsView> views;
      for (size_t i = 0; i < slots.size(); ++i) {
        if (Status s = readState(*session, *slots[i], values[i]); !s)
          return fail(s.message());
        views.push_back({slots[i]->name, values[i].dtype, values[i].shape, values[i].data()});
      }
      CheckpointState state;
      state.step = step + 1;
      state.data = data->state();
      state.seed = static_cast<uint64_t>(run.seed);
      state.config = runConfig(run);
      progress.clear();
      if (Status s = saveCheckpoint(run.checkpointDir, state, views); !s)
        return fail(s.message());
    }
  }
  progress.finish();
  if (auto out = a.values.find("--export-onnx"); out != a.values.end())
    if (Status s = exportTrainedOnnx(a.model, out->second, *session); !s)
      return fail(s.message());
  return 0;
}

} // namespace trc
