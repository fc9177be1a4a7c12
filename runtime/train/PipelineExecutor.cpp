//===- PipelineExecutor.cpp - runs a pipeline schedule's table -------------===//
//
// See PipelineExecutor.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/PipelineExecutor.h"
#include "trc/Abi/ArtifactNames.h"
#include "trc/Abi/PipelineNames.h"
#include "trc/Abi/SlotNames.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Manifest.h"
#include "runtime/support/Names.h"
#include "runtime/support/Parse.h"
#include "runtime/support/Profiler.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace trc::rt {

namespace {

bool startsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string stageFolder(const std::string &dir, int stage, const char *program) {
  return dir + "/" + stageFolderName(stage, program);
}

Status setScalar(HostTensor &t, float value) {
  if (!t.data())
    if (Status s = t.allocate(DType::F32, {}); !s)
      return s;
  *static_cast<float *>(t.data()) = value;
  return Status::success();
}

} // namespace

StatusOr<std::unique_ptr<PipelineExecutor>>
PipelineExecutor::open(const std::string &dir, Backend &backend, Communicator &pipeline,
                       Communicator &data, Communicator &dataContext, Communicator &replica,
                       int shardIndex, int tensorIndex, PipelineSchedule schedule,
                       LogicalSlots logical) {
  StatusOr<PipelineIndex> index = readPipelineIndex(dir);
  if (!index.ok())
    return index.status();
  if (index->ranks != pipeline.size() || index->chunks != schedule.shape.chunks ||
      schedule.shape.ranks != pipeline.size())
    return Status::error(dir + ": the step was compiled for " + std::to_string(index->ranks) +
                         " pipeline ranks x " + std::to_string(index->chunks) +
                         " chunks; this run has " + std::to_string(pipeline.size()) + " x " +
                         std::to_string(schedule.shape.chunks) +
                         " (key 'pipeline_parallel_degree' / 'virtual_stages')");
  std::unique_ptr<PipelineExecutor> ex(
      new PipelineExecutor(backend, pipeline, data, dataContext, replica, std::move(schedule)));
  ex->dir_ = dir;
  ex->logical_ = std::move(logical);
  ex->index_ = *std::move(index);
  for (size_t i = 0; i < ex->index_.transfers.size(); ++i)
    ex->transferOrdinal_[ex->index_.transfers[i].id] = i;
  const int64_t messages =
      int64_t(ex->index_.transfers.size()) * ex->schedule_.shape.microbatches;
  if (messages > pipeline.maxTag())
    return Status::error("the pipeline exchanges " + std::to_string(messages) +
                         " messages per step, more than the communicator's tags (" +
                         std::to_string(pipeline.maxTag()) + ")");
  for (int s = pipeline.rank(); s < ex->index_.stages(); s += ex->index_.ranks) {
    StageSessions st;
    st.stage = s;
    auto load = [&](const char *program, std::unique_ptr<Artifact> &artifact,
                    std::unique_ptr<Session> &session,
                    std::vector<const Session *> shareWith) -> Status {
      StatusOr<std::unique_ptr<Artifact>> a =
          Artifact::load(stageFolder(dir, s, program), backend.target());
      if (!a.ok())
        return a.status();
      artifact = *std::move(a);
      StatusOr<std::unique_ptr<Session>> made =
          Session::create(*artifact, backend, shardIndex, tensorIndex, shareWith);
      if (!made.ok())
        return Status(made.status()).withPrefix("stage " + std::to_string(s) + " " + program + ": ");
      session = *std::move(made);
      return Status::success();
    };
    // The forward program owns the parameters, the weights program the
    // gradient accumulators, the apply program the optimizer state.
    if (Status e = load(abi::kForwardPhase, st.forwardArtifact, st.forward, {}); !e)
      return e;
    if (Status e =
            load(abi::kBackwardPhase, st.backwardArtifact, st.backward, {st.forward.get()});
        !e)
      return e;
    if (Status e = load(abi::kWeightsPhase, st.weightsArtifact, st.weights, {st.forward.get()}); !e)
      return e;
    if (Status e =
            load(abi::kNormPhase, st.normArtifact, st.norm, {st.forward.get(), st.weights.get()});
        !e)
      return e;
    if (Status e = load(abi::kApplyPhase, st.applyArtifact, st.apply,
                        {st.forward.get(), st.weights.get()});
        !e)
      return e;
    ex->stages_.push_back(std::move(st));
  }
  if (Status s = ex->findTiedGradients(); !s)
    return s;
  if (Status s = ex->zeroInputs(); !s)
    return s;
  return ex;
}

/// Sets the program's input `name` when it takes one: a stage without
/// parameters has no accumulators to keep, no update to scale.
Status PipelineExecutor::setIfTaken(Session &session, const char *name, const HostTensor &value) {
  if (!session.manifest().find(SlotKind::Input, name))
    return Status::success();
  return session.setInput(name, value);
}

PipelineExecutor::StageSessions *PipelineExecutor::stage(int index) {
  for (StageSessions &s : stages_)
    if (s.stage == index)
      return &s;
  return nullptr;
}

int PipelineExecutor::tagOf(const std::string &transferId, int microbatch) const {
  return int(transferOrdinal_.at(transferId)) * schedule_.shape.microbatches + microbatch;
}

/// Sends whose message has gone give their buffers back (all: waits).
void PipelineExecutor::releaseFinishedSends(bool all) {
  for (size_t i = 0; i < sends_.size();) {
    bool done = true;
    if (!all) {
      StatusOr<bool> finished = pipeline_.test(sends_[i].request);
      done = finished.ok() && *finished;
    }
    if (!done) {
      ++i;
      continue;
    }
    buffers_.release(sends_[i].slot, sends_[i].microbatch);
    sends_.erase(sends_.begin() + std::ptrdiff_t(i));
  }
}

/// Points the session's stash, send and receive slots at microbatch
/// `microbatch`'s buffers and starts the receives.
Status PipelineExecutor::bindMicrobatch(Session &session, int microbatch,
                                        std::vector<P2PRequest> &receives) {
  for (const Slot &slot : session.manifest().slots) {
    bool stash = abi::hasSlotPrefix(slot.name, abi::kStashPrefix);
    bool send = slot.kind == SlotKind::Output && abi::hasSlotPrefix(slot.name, abi::kSendPrefix);
    bool recv = slot.kind == SlotKind::Input && abi::hasSlotPrefix(slot.name, abi::kRecvPrefix);
    if (!stash && !send && !recv)
      continue;
    StatusOr<void *> buf = buffers_.buffer(slot.name, microbatch, slot.byteSize);
    if (!buf.ok())
      return buf.status();
    if (Status s = session.bindSlot(slot.kind, slot.name, *buf); !s)
      return s;
    if (!recv)
      continue;
    std::string id = slot.name.substr(std::strlen(abi::kRecvPrefix));
    auto ordinal = transferOrdinal_.find(id);
    if (ordinal == transferOrdinal_.end())
      return Status::error("input '" + percentEncode(slot.name) +
                           "' receives a transfer pipeline.trc does not list");
    const PipelineIndex::Transfer &t = index_.transfers[ordinal->second];
    int peer = t.from % index_.ranks;
    StatusOr<P2PRequest> r = pipeline_.irecv(*buf, size_t(slot.numElements), slot.dtype, peer,
                                             tagOf(id, microbatch));
    if (!r.ok())
      return r.status();
    receives.push_back(*std::move(r));
  }
  return Status::success();
}

Status PipelineExecutor::sendOutputs(Session &session, int microbatch) {
  for (const Slot &slot : session.manifest().slots) {
    if (slot.kind != SlotKind::Output || !abi::hasSlotPrefix(slot.name, abi::kSendPrefix))
      continue;
    std::string id = slot.name.substr(std::strlen(abi::kSendPrefix));
    auto ordinal = transferOrdinal_.find(id);
    if (ordinal == transferOrdinal_.end())
      return Status::error("output '" + percentEncode(slot.name) +
                           "' sends a transfer pipeline.trc does not list");
    const PipelineIndex::Transfer &t = index_.transfers[ordinal->second];
    StatusOr<P2PRequest> r =
        pipeline_.isend(session.slotPointer(slot), size_t(slot.numElements), slot.dtype,
                        t.to % index_.ranks, tagOf(id, microbatch));
    if (!r.ok())
      return r.status();
    sends_.push_back({*std::move(r), slot.name, microbatch});
  }
  return Status::success();
}

Status PipelineExecutor::run(const PipelineStep &step, const FeedMicrobatch &feed,
                             double &lossSum) {
  StageSessions *st = stage(step.stage);
  if (!st)
    return Status::error("the schedule runs stage " + std::to_string(step.stage) +
                         " on rank " + std::to_string(pipeline_.rank()) + ", which holds "
                         "none of it");
  switch (step.action) {
  case PipelineAction::Forward:
    return runProgram(*st, Program::Forward, step.microbatch, feed, lossSum);
  case PipelineAction::Backward:
    if (Status s = runProgram(*st, Program::Backward, step.microbatch, feed, lossSum); !s)
      return s;
    // A schedule that does not split the backward runs W right after B.
    if (schedule_.splitsWeights)
      return Status::success();
    [[fallthrough]];
  case PipelineAction::BackwardWeights:
    return runProgram(*st, Program::Weights, step.microbatch, feed, lossSum);
  }
  return Status::success();
}

Status PipelineExecutor::runProgram(StageSessions &st, Program program, int microbatch,
                                    const FeedMicrobatch &feed, double &lossSum) {
  static const char *const kLetters[] = {"F", "B", "W"};
  static const char *const kNames[] = {" forward", " backward", " weights"};
  Session &session = program == Program::Forward    ? *st.forward
                     : program == Program::Backward ? *st.backward
                                                    : *st.weights;
  // "F stage 0" with the microbatch as an argument: the summary totals each
  // stage's forwards, backwards and weight gradients.
  ProfileScope span(Profiler::recording()
                        ? std::string(kLetters[int(program)]) + " stage " + std::to_string(st.stage)
                        : std::string(),
                    profile::kCompute);
  span.arg("microbatch", int64_t(microbatch));
  if (Status s = feed(session, microbatch); !s)
    return s;
  std::vector<P2PRequest> receives;
  if (Status s = bindMicrobatch(session, microbatch, receives); !s)
    return s;
  {
    ProfileScope wait(Profiler::recording() ? std::string("p2p wait") : std::string(),
                      profile::kP2p);
    if (Status s = pipeline_.waitAll(receives); !s)
      return s.withPrefix("stage " + std::to_string(st.stage) + ": ");
  }
  if (Status s = setIfTaken(session, abi::kLossScale, lossScale_); !s)
    return s;
  if (program == Program::Weights) {
    if (Status s = setScalar(keepAccum_, st.accumulating ? 1.0f : 0.0f); !s)
      return s;
    if (Status s = setIfTaken(session, abi::kKeepAccum, keepAccum_); !s)
      return s;
  }
  if (Status s = session.run(); !s)
    return s.withPrefix("stage " + std::to_string(st.stage) + kNames[int(program)] +
                        " microbatch " + std::to_string(microbatch) + ": ");
  if (Status s = sendOutputs(session, microbatch); !s)
    return s;
  // Received values live in the program's run only; a stash is done with
  // after its last reader (W when it reads it, else B).
  for (const Slot &slot : session.manifest().slots) {
    if (slot.kind != SlotKind::Input)
      continue;
    bool lastReader = program == Program::Weights ||
                      (program == Program::Backward &&
                       !st.weights->manifest().find(SlotKind::Input, slot.name));
    if (abi::hasSlotPrefix(slot.name, abi::kRecvPrefix) ||
        (abi::hasSlotPrefix(slot.name, abi::kStashPrefix) && lastReader))
      buffers_.release(slot.name, microbatch);
  }
  releaseFinishedSends(false);
  if (offloadHorizon_ > 0)
    if (Status s = moveStashes(st, program, microbatch); !s)
      return s.withPrefix("stage " + std::to_string(st.stage) + " offloading: ");
  if (program == Program::Forward) {
    if (session.manifest().find(SlotKind::Output, abi::kLossOutput)) {
      StatusOr<HostTensor> loss = session.getOutput(abi::kLossOutput);
      if (!loss.ok())
        return loss.status();
      lossSum += *static_cast<const float *>(loss->data());
    }
    // Running statistics: each microbatch's forward updates them, as each
    // forward does in PyTorch (the forward's only "update:" outputs).
    return session.applyUpdates();
  }
  if (program == Program::Backward)
    return Status::success();
  st.accumulating = true;
  return session.applyUpdates();
}

/// Offloading after `program` ran for `microbatch`: the offloads started
/// after the previous program are done (they ran beside this one), this
/// forward's stashes whose backward is not among the next `horizon`
/// actions go to the host, and the stashes of backwards that are come back.
Status PipelineExecutor::moveStashes(StageSessions &st, Program program, int microbatch) {
  if (Status s = buffers_.settleOffloads(); !s)
    return s;
  const std::vector<PipelineStep> &row = schedule_.perRank[size_t(pipeline_.rank())];
  const size_t end = std::min(row.size(), cursor_ + 1 + size_t(offloadHorizon_));
  auto reads = [](const PipelineStep &a) { return a.action != PipelineAction::Forward; };
  if (program == Program::Forward) {
    bool soon = false;
    for (size_t i = cursor_ + 1; i < end; ++i)
      soon |= reads(row[i]) && row[i].stage == st.stage && row[i].microbatch == microbatch;
    if (!soon)
      for (const Slot &slot : st.forward->manifest().slots)
        if (slot.kind == SlotKind::Output && abi::hasSlotPrefix(slot.name, abi::kStashPrefix))
          if (Status s = buffers_.offload(slot.name, microbatch); !s)
            return s;
  }
  for (size_t i = cursor_ + 1; i < end; ++i) {
    StageSessions *next = reads(row[i]) ? stage(row[i].stage) : nullptr;
    if (!next)
      continue;
    for (Session *session : {next->backward.get(), next->weights.get()})
      for (const Slot &slot : session->manifest().slots)
        if (slot.kind == SlotKind::Input && abi::hasSlotPrefix(slot.name, abi::kStashPrefix))
          if (Status s = buffers_.prefetch(slot.name, row[i].microbatch); !s)
            return s;
  }
  return Status::success();
}

/// A parameter several stages hold (tied embeddings): each stage's
/// accumulated gradient becomes their sum, on every holder. Stages are
/// visited in index order on every rank, so the messages match.
Status PipelineExecutor::findTiedGradients() {
  std::map<std::string, std::vector<int>> holders;
  for (int s = 0; s < index_.stages(); ++s) {
    std::string path = stageFolder(dir_, s, abi::kApplyPhase) + "/" + abi::kManifestFile;
    StatusOr<std::string> text = readSmallFile(path, 64 << 20);
    if (!text.ok())
      return text.status();
    StatusOr<Manifest> m = parseManifest(*text);
    if (!m.ok())
      return Status(m.status()).withPrefix(path + ": ");
    for (const Slot &slot : m->slots)
      if (slot.kind == SlotKind::Input && startsWith(slot.name, abi::kGradAccumPrefix))
        holders[slot.name].push_back(s);
  }
  for (auto &[name, stages] : holders)
    if (stages.size() > 1)
      tied_[name] = stages;
  return Status::success();
}

/// Optimizer state and accumulators start at zero (a resumed run loads
/// them afterwards).
Status PipelineExecutor::zeroInputs() {
  for (StageSessions &st : stages_)
    for (Session *session : {st.weights.get(), st.apply.get()})
      for (const Slot &slot : session->manifest().slots) {
        if (slot.kind != SlotKind::Input || !abi::isStateSlot(slot.name))
          continue;
        HostTensor zeros;
        if (Status s = zeros.allocate(slot.dtype, slot.shape); !s)
          return s;
        if (Status s = session->setInput(slot.name, zeros); !s)
          return s;
      }
  return Status::success();
}

Status PipelineExecutor::sumTiedGradients() {
  int tag = 0;
  for (auto &[name, stages] : tied_) {
    ++tag;
    // Each holder's gradient on the host, summed in stage order on every
    // holding rank (so every holder computes the same bits).
    std::vector<HostTensor> parts(stages.size());
    const Slot *slot = nullptr;
    for (size_t k = 0; k < stages.size(); ++k) {
      StageSessions *st = stage(stages[k]);
      if (!st)
        continue;
      slot = st->weights->manifest().find(SlotKind::Input, name);
      if (Status s = parts[k].allocate(slot->dtype, slot->shape); !s)
        return s;
      if (Status s = backend_.copyToHost(parts[k].data(), st->weights->slotPointer(*slot),
                                         size_t(slot->byteSize));
          !s)
        return s;
    }
    if (!slot)
      continue; // this rank holds none of them
    // Every holding rank sends its parts to the other holding ranks.
    std::vector<P2PRequest> requests;
    for (size_t k = 0; k < stages.size(); ++k) {
      int owner = stages[k] % index_.ranks;
      for (size_t j = 0; j < stages.size(); ++j) {
        int peer = stages[j] % index_.ranks;
        if (owner == pipeline_.rank() && peer != owner) {
          StatusOr<P2PRequest> r = pipeline_.isend(parts[k].data(), size_t(slot->numElements),
                                                   slot->dtype, peer,
                                                   pipeline_.maxTag() - tag * 64 - int(k));
          if (!r.ok())
            return r.status();
          requests.push_back(*std::move(r));
        }
      }
    }
    for (size_t k = 0; k < stages.size(); ++k) {
      int owner = stages[k] % index_.ranks;
      if (owner == pipeline_.rank())
        continue;
      if (Status s = parts[k].allocate(slot->dtype, slot->shape); !s)
        return s;
      StatusOr<P2PRequest> r = pipeline_.irecv(parts[k].data(), size_t(slot->numElements),
                                               slot->dtype, owner,
                                               pipeline_.maxTag() - tag * 64 - int(k));
      if (!r.ok())
        return r.status();
      requests.push_back(*std::move(r));
    }
    if (Status s = pipeline_.waitAll(requests); !s)
      return s.withPrefix("summing the tied gradient '" + percentEncode(name) + "': ");
    if (slot->dtype != DType::F32)
      return Status::error("tied gradient '" + percentEncode(name) + "' is not f32");
    HostTensor total = std::move(parts[0]);
    float *sum = static_cast<float *>(total.data());
    for (size_t k = 1; k < stages.size(); ++k) {
      const float *add = static_cast<const float *>(parts[k].data());
      for (int64_t i = 0; i < slot->numElements; ++i)
        sum[i] += add[i];
    }
    for (int s : stages)
      if (StageSessions *st = stage(s))
        if (Status e = backend_.copyToDevice(st->weights->slotPointer(*slot), total.data(),
                                             size_t(slot->byteSize));
            !e)
          return e;
  }
  return Status::success();
}

/// Every stage's accumulated gradients averaged over its data x context
/// group (in place, in the memory the programs use: host memory on the
/// CPU; context parts come scaled by C, so this sums them over the context
/// axis); shards the programs averaged over the shard group, over the
/// replica group.
/// Parameters the forwards update (running statistics, each data rank's
/// from its rows) are averaged over the data group too: the update is
/// linear in the statistics, so once per step equals the one-program
/// step's average at each microbatch.
Status PipelineExecutor::averageOverData() {
  if (data_.size() > 1)
    for (StageSessions &st : stages_)
      for (const Slot &slot : st.forward->manifest().slots) {
        if (slot.kind != SlotKind::Param ||
            !st.forward->manifest().find(SlotKind::Output, abi::kUpdatePrefix + slot.name))
          continue;
        void *value = st.forward->slotPointer(slot);
        if (Status s = data_.allReduce(value, value, size_t(slot.numElements), slot.dtype,
                                       ReduceOp::Avg);
            !s)
          return s.withPrefix("averaging '" + percentEncode(slot.name) + "' over the data ranks: ");
      }
  for (StageSessions &st : stages_)
    for (const Slot &slot : st.weights->manifest().slots)
      if (slot.kind == SlotKind::Input && startsWith(slot.name, abi::kGradAccumPrefix)) {
        Communicator &group = slot.shardDegree ? replica_ : dataContext_;
        if (group.size() == 1)
          continue;
        void *grad = st.weights->slotPointer(slot);
        if (Status s = group.allReduce(grad, grad, size_t(slot.numElements), slot.dtype,
                                       ReduceOp::Avg);
            !s)
          return s.withPrefix("averaging '" + percentEncode(slot.name) + "' over the " +
                              (slot.shardDegree ? "replicas of its shard: "
                                                : "data (x context) ranks: "));
      }
  return Status::success();
}

StatusOr<PipelineStepResult> PipelineExecutor::runStep(const FeedMicrobatch &feed, float lr,
                                                       float step, const ApplyDecision &decide,
                                                       float lossScale) {
  for (StageSessions &st : stages_)
    st.accumulating = false;
  if (Status s = setScalar(lossScale_, lossScale); !s)
    return s;
  double lossSum = 0;
  const std::vector<PipelineStep> &row = schedule_.perRank[size_t(pipeline_.rank())];
  for (cursor_ = 0; cursor_ < row.size(); ++cursor_)
    if (Status s = run(row[cursor_], feed, lossSum); !s)
      return s;
  if (Status s = buffers_.settleOffloads(); !s)
    return s;
  {
    std::vector<P2PRequest> pending;
    for (PendingSend &send : sends_)
      pending.push_back(std::move(send.request));
    if (Status s = pipeline_.waitAll(pending); !s)
      return s;
    for (PendingSend &send : sends_)
      send.request = P2PRequest();
    releaseFinishedSends(true);
  }
  if (Status s = averageOverData(); !s)
    return s;
  if (Status s = sumTiedGradients(); !s)
    return s;
  PipelineStepResult result;
  if (Status s = setScalar(lr_, lr); !s)
    return s;
  if (Status s = setScalar(step_, step); !s)
    return s;
  if (Status s = setScalar(gradScale_, 1.0f / (float(schedule_.shape.microbatches) * lossScale));
      !s)
    return s;
  // The squared global norm: every stage's share (several per rank with
  // chunks), summed over the pipeline (data replicas hold equal values).
  double squares[1] = {0};
  for (StageSessions &st : stages_) {
    if (Status s = setIfTaken(*st.norm, abi::kGradScale, gradScale_); !s)
      return s;
    if (Status s = st.norm->run(); !s)
      return s.withPrefix("stage " + std::to_string(st.stage) + " norm: ");
    if (!st.norm->manifest().find(SlotKind::Output, abi::kGradSquaresOutput))
      continue; // a stage without parameters
    StatusOr<HostTensor> share = st.norm->getOutput(abi::kGradSquaresOutput);
    if (!share.ok())
      return share.status();
    squares[0] += *static_cast<const float *>(share->data());
  }
  if (Status s = pipeline_.allReduce(squares, squares, 1, DType::F64, ReduceOp::Sum); !s)
    return s;
  if (Status s = setScalar(normSquared_, float(squares[0])); !s)
    return s;
  for (StageSessions &st : stages_) {
    Session &apply = *st.apply;
    for (auto [name, value] : {std::pair{abi::kLearningRate, &lr_},
                               std::pair{abi::kStepCount, &step_},
                               std::pair{abi::kGradScale, &gradScale_},
                               std::pair{abi::kGradNormSquared, &normSquared_}})
      if (Status s = setIfTaken(apply, name, *value); !s)
        return s;
    if (Status s = apply.run(); !s)
      return s.withPrefix("stage " + std::to_string(st.stage) + " apply: ");
    if (!apply.manifest().find(SlotKind::Output, abi::kGradNormOutput))
      continue; // a stage without parameters
    StatusOr<HostTensor> norm = apply.getOutput(abi::kGradNormOutput);
    if (!norm.ok())
      return norm.status();
    result.gradNorm = *static_cast<const float *>(norm->data());
  }
  // The loss lives on the last stage's rank; every rank reports it.
  double loss[1] = {lossSum / (double(schedule_.shape.microbatches) * lossScale)};
  if (Status s = pipeline_.allReduce(loss, loss, 1, DType::F64, ReduceOp::Sum); !s)
    return s;
  if (Status s = data_.allReduce(loss, loss, 1, DType::F64, ReduceOp::Avg); !s)
    return s;
  result.loss = loss[0];
  // The apply programs computed the new values; they replace the old ones
  // only now, when the step's loss and norm are known on every rank.
  result.applied = !decide || decide(result.loss, result.gradNorm);
  if (result.applied)
    for (StageSessions &st : stages_) // only parameters and optimizer state:
      if (Status s = st.apply->applyUpdates(); !s) // the accumulators restart
        return s;
  result.peakStashBytes = buffers_.peakDeviceStashBytes();
  result.peakHostStashBytes = buffers_.peakHostStashBytes();
  return result;
}

namespace {

/// The state slots of a stage: its forward's parameters and, unless `parts`
/// asks for the parameters only, its apply's optimizer state (inputs
/// "<kind>:<param>" other than the accumulators).
template <typename Visit>
Status forEachStateSlot(const PipelineExecutor::StageSessions &st, Visit visit,
                        PipelineExecutor::StateParts parts =
                            PipelineExecutor::StateParts::ParametersAndOptimizer) {
  for (const Slot &slot : st.forward->manifest().slots)
    if (slot.kind == SlotKind::Param)
      if (Status s = visit(*st.forward, slot); !s)
        return s;
  if (parts == PipelineExecutor::StateParts::Parameters)
    return Status::success();
  for (const Slot &slot : st.apply->manifest().slots)
    if (slot.kind == SlotKind::Input && abi::isOptimizerStateSlot(slot.name))
      if (Status s = visit(*st.apply, slot); !s)
        return s;
  return Status::success();
}

// Tensors as bytes for the gather: count, then per tensor its name, dtype,
// shape and data (sizes as u64, host byte order: one job, one machine type).
void putU64(std::string &out, uint64_t v) { out.append(reinterpret_cast<const char *>(&v), 8); }

std::string serialize(const std::vector<NamedTensor> &tensors) {
  std::string out;
  putU64(out, tensors.size());
  for (const NamedTensor &t : tensors) {
    putU64(out, t.name.size());
    out += t.name;
    putU64(out, uint64_t(t.tensor.dtype));
    putU64(out, t.tensor.shape.size());
    for (int64_t d : t.tensor.shape)
      putU64(out, uint64_t(d));
    putU64(out, t.tensor.byteSize());
    out.append(static_cast<const char *>(t.tensor.data()), t.tensor.byteSize());
  }
  return out;
}

Status deserialize(const std::string &bytes, std::vector<NamedTensor> &out) {
  size_t at = 0;
  auto take = [&](uint64_t &v) {
    if (at + 8 > bytes.size())
      return false;
    std::memcpy(&v, bytes.data() + at, 8);
    at += 8;
    return true;
  };
  const Status truncated = Status::error("the gathered pipeline state is truncated");
  uint64_t count = 0;
  if (!take(count))
    return truncated;
  for (uint64_t i = 0; i < count; ++i) {
    NamedTensor t;
    uint64_t length = 0, dtype = 0, rank = 0, size = 0;
    if (!take(length) || at + length > bytes.size())
      return truncated;
    t.name = bytes.substr(at, length);
    at += length;
    if (!take(dtype) || !take(rank))
      return truncated;
    std::vector<int64_t> shape(rank);
    for (int64_t &d : shape) {
      uint64_t v = 0;
      if (!take(v))
        return truncated;
      d = int64_t(v);
    }
    if (Status s = t.tensor.allocate(DType(dtype), shape); !s)
      return s;
    if (!take(size) || size != t.tensor.byteSize() || at + size > bytes.size())
      return truncated;
    std::memcpy(t.tensor.data(), bytes.data() + at, size);
    at += size;
    out.push_back(std::move(t));
  }
  return Status::success();
}

} // namespace

StatusOr<std::vector<NamedTensor>> PipelineExecutor::readState(StateParts parts) const {
  std::vector<NamedTensor> out;
  std::map<std::string, bool> seen;
  for (const StageSessions &st : stages_) {
    Status s = forEachStateSlot(st, [&](Session &session, const Slot &slot) -> Status {
      if (seen[slot.name])
        return Status::success();
      seen[slot.name] = true;
      StatusOr<HostTensor> whole = logical_.read(session, slot);
      if (!whole.ok())
        return whole.status();
      out.push_back({slot.name, *std::move(whole)});
      return Status::success();
    }, parts);
    if (!s)
      return s;
  }
  return out;
}

StatusOr<std::vector<NamedTensor>> PipelineExecutor::gatherState(StateParts parts) const {
  StatusOr<std::vector<NamedTensor>> mine = readState(parts);
  if (!mine.ok())
    return mine.status();
  if (data_.rank() != 0) // the other data replicas hold the same values
    return std::vector<NamedTensor>();
  if (pipeline_.rank() != 0) {
    std::string bytes = serialize(*mine);
    uint64_t size = bytes.size();
    if (Status s = pipeline_.send(&size, 1, DType::U64, 0); !s)
      return s;
    if (Status s = pipeline_.send(bytes.data(), bytes.size(), DType::U8, 0); !s)
      return s;
    return std::vector<NamedTensor>();
  }
  std::vector<NamedTensor> all = *std::move(mine);
  for (int r = 1; r < pipeline_.size(); ++r) {
    uint64_t size = 0;
    if (Status s = pipeline_.recv(&size, 1, DType::U64, r); !s)
      return s;
    std::string bytes(size_t(size), '\0');
    if (Status s = pipeline_.recv(bytes.data(), bytes.size(), DType::U8, r); !s)
      return s;
    std::vector<NamedTensor> theirs;
    if (Status s = deserialize(bytes, theirs); !s)
      return s;
    for (NamedTensor &t : theirs)
      if (std::none_of(all.begin(), all.end(),
                       [&](const NamedTensor &have) { return have.name == t.name; }))
        all.push_back(std::move(t));
  }
  return all;
}

Status PipelineExecutor::writeState(const FindTensor &find, StateParts parts) {
  for (StageSessions &st : stages_) {
    Status s = forEachStateSlot(st, [&](Session &session, const Slot &slot) -> Status {
      const HostTensor *value = find(slot.name);
      if (!value)
        return Status::error("the checkpoint has no tensor '" + percentEncode(slot.name) +
                             "' (a checkpoint of another model?)");
      if (value->dtype != slot.dtype || value->shape != slot.logicalShape())
        return Status::error("checkpoint tensor '" + percentEncode(slot.name) + "' is " +
                             formatType(value->dtype, value->shape) + ", the step expects " +
                             formatType(slot.dtype, slot.logicalShape()));
      return logical_.write(session, slot, *value);
    }, parts);
    if (!s)
      return s;
  }
  return Status::success();
}

} // namespace trc::rt
