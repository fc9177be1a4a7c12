//===- DistributedRun.cpp - a training run's ranks (see DistributedRun.h) ----===//
#include "runtime/train/DistributedRun.h"
#include "trc/Abi/SlotNames.h"

#include "runtime/comm/Collectives.h"
#include "runtime/support/LaunchEnvironment.h"
#include "runtime/comm/SingleProcessCommunicator.h"
#include "runtime/comm/Watchdog.h"
#include "runtime/comm/mpi/MpiCommunicator.h"
#include "runtime/formats/FileOps.h"
#include "runtime/support/Names.h"
#include "runtime/support/Parse.h"
#include "runtime/support/TensorSplit.h"

#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>


namespace trc::rt {

namespace {

/// A slot as the session holds it: a param, or an optimizer-state input
/// (its value as of the last applyUpdates: a skipped step's "update:"
/// output is not the state).
StatusOr<HostTensor> readSlot(Session &session, const Slot &slot) {
  if (slot.kind == SlotKind::Param)
    return session.getParam(slot.name);
  return session.getInput(slot.name);
}

Status writeSlot(Session &session, const Slot &slot, const HostTensor &value) {
  if (slot.kind == SlotKind::Param)
    return session.setParam(slot.name, value);
  return session.setInput(slot.name, value);
}

} // namespace

/// The tensor group (consecutive blocks of T ranks), the context group
/// (the C ranks with my data and tensor indices: rank r has tensor index
/// r % T, context index r / T % C and data index r / (T x C)) and the data
/// axis (the ranks with my tensor and context indices), data x context
/// (the ranks with my tensor index: gradients' one reduction under context
/// parallelism); shard groups are consecutive blocks of `shardDegree` ranks
/// of data x context, replica groups its ranks at the same position in each
/// block. Without tensor and context parallelism the data axis is the world
/// itself and the tensor and context groups this process alone (no extra
/// NCCL communicators).
Status DistributedRun::splitGrid(Communicator &fullWorld, const ParallelPlan &plan, Groups &g) {
  auto take = [](StatusOr<std::unique_ptr<Communicator>> made, std::unique_ptr<Communicator> &into,
                 const char *what) {
    if (!made.ok())
      return Status(made.status()).withPrefix(std::string(what) + " groups: ");
    into = *std::move(made);
    return Status::success();
  };
  // Pipeline outermost: world rank w is stage w / (D x T) of the pipeline
  // of the ranks with its w mod (D x T); each stage's D x T ranks are the
  // data x tensor grid below.
  Communicator *stageWorld = &fullWorld;
  if (plan.pipelineDegree > 1) {
    const int w = fullWorld.rank(), perStage = fullWorld.size() / plan.pipelineDegree;
    if (Status s = take(fullWorld.split(w % perStage, w), g.pipeline, "pipeline"); !s)
      return s;
    if (Status s = take(fullWorld.split(w / perStage, w), g.ownedStage, "stage"); !s)
      return s;
    stageWorld = g.ownedStage.get();
  } else {
    g.pipeline = std::make_unique<SingleProcessCommunicator>();
  }
  Communicator &world = *stageWorld;
  const int r = world.rank(), tp = plan.tensorDegree, cp = plan.contextDegree;
  if (tp > 1) {
    if (Status s = take(world.split(r / tp, r), g.tensor, "tensor"); !s)
      return s;
  } else {
    g.tensor = std::make_unique<SingleProcessCommunicator>();
  }
  if (cp > 1) {
    if (Status s = take(world.split(r / (tp * cp) * tp + r % tp, r), g.context, "context"); !s)
      return s;
  } else {
    g.context = std::make_unique<SingleProcessCommunicator>();
  }
  if (tp * cp > 1) {
    if (Status s = take(world.split(r % (tp * cp), r), g.ownedData, "data-axis"); !s)
      return s;
    g.data = g.ownedData.get();
  } else {
    g.data = &world;
  }
  if (cp > 1) {
    if (Status s = take(world.split(r % tp, r), g.ownedDataContext, "data x context"); !s)
      return s;
    g.dataContext = g.ownedDataContext.get();
  } else {
    g.dataContext = g.data;
  }
  // ZeRO shards over the ranks that hold whole parameters alike: data x
  // context (the data axis without context parallelism).
  const int d = g.dataContext->rank(), degree = plan.shardDegree;
  if (Status s = take(g.dataContext->split(d / degree, d), g.shard, "shard"); !s)
    return s;
  return take(g.dataContext->split(d % degree, d), g.replica, "replica");
}

DistributedRun::~DistributedRun() {
  setCollectiveGroups(nullptr, nullptr, nullptr, nullptr);
  setPipelineGroup(nullptr);
  setContextGroups(nullptr, nullptr);
}

Status onceForTheJob(const Status &s) {
  if (s.ok())
    return s;
  StatusOr<LaunchEnvironment> launch = readLaunchEnvironment();
  return launch.ok() && launch->rank != 0 ? Status::reported() : s;
}

StatusOr<std::unique_ptr<DistributedRun>> DistributedRun::create(const std::string &configSpec) {
  StatusOr<LaunchEnvironment> launch = readLaunchEnvironment();
  if (!launch.ok())
    return launch.status();
  const LaunchEnvironment &env = *launch;
  std::unique_ptr<DistributedRun> run(new DistributedRun);
  int worldSize = env.size > 0 ? env.size : 1;
  StatusOr<ParallelPlan> plan =
      parseParallelPlan(configSpec.empty() ? "{}" : configSpec, worldSize);
  if (!plan.ok())
    return onceForTheJob(plan.status());
  run->config_ = *std::move(plan);
  // Host-side exchanges (parameters, checkpoints, the artifact) use host
  // memory: with NCCL (device memory) they go over MPI, the program's
  // collectives over NCCL.
  bool nccl = run->config_.communicator == "nccl";
  StatusOr<std::unique_ptr<Communicator>> world =
      createCommunicator(nccl ? "auto" : run->config_.communicator);
  if (!world.ok())
    return Status(world.status()).withPrefix("--config communicator: ");
  run->world_ = *std::move(world);
  if (run->world_->size() != worldSize && env.size > 0)
    return Status::error("the launcher says " + std::to_string(worldSize) +
                         " ranks, the communicator has " +
                         std::to_string(run->world_->size()));
  if (Status s = splitGrid(*run->world_, run->config_, run->host_); !s)
    return s;
  run->tensor_ = run->host_.tensor.get();
  run->data_ = run->host_.data;
  run->dataContext_ = run->host_.dataContext;
  run->shard_ = run->host_.shard.get();
  run->replica_ = run->host_.replica.get();
  if (nccl) {
    StatusOr<std::unique_ptr<Communicator>> deviceWorld = createCommunicator("nccl");
    if (!deviceWorld.ok())
      return Status(deviceWorld.status()).withPrefix("--config communicator: ");
    run->deviceWorld_ = *std::move(deviceWorld);
    if (Status s = splitGrid(*run->deviceWorld_, run->config_, run->device_); !s)
      return s;
  }
  run->dataParallel_ = run->world_->size() > 1 || !configSpec.empty();
  const Groups &program = nccl ? run->device_ : run->host_;
  setCollectiveGroups(program.data, program.shard.get(), program.replica.get(),
                      program.tensor.get());
  setPipelineGroup(program.pipeline.get());
  setContextGroups(program.context.get(), program.dataContext);
  run->context_ = run->host_.context.get();
  run->pipeline_ = run->host_.pipeline.get();
  return run;
}

DataParallelBuild DistributedRun::dataParallelBuild() const {
  DataParallelBuild dp;
  dp.zeroStage = config_.zeroStage;
  dp.shardDegree = config_.shardDegree;
  dp.bucketMb = config_.bucketCapMb;
  // Replicas of a shard average what their shard groups reduced (every
  // stage: ZeRO-1 reduce-scatters like ZeRO-2).
  dp.hybrid = config_.zeroStage >= 1 && config_.replicas() > 1;
  return dp;
}

Status DistributedRun::broadcastParameters(Session &session) {
  for (const Slot &slot : session.manifest().slots) {
    if (slot.kind != SlotKind::Param)
      continue;
    // Who holds the same values as this rank: on the data axis, a shard's
    // owners in the other copies (its replica group) or every data rank;
    // across the tensor group, everyone unless the param is split (the
    // tensor ranks then hold different parts). After the data-axis step
    // every tensor rank of a group holds what its data-axis root held, so
    // the tensor step copies one value to all of them. The ranks of a
    // context group hold whole parameters alike, and different shards of
    // a sharded one (its replica group spans the context axis too).
    Communicator *groups[3] = {slot.shardDegree ? replica_ : data_,
                               slot.isSplit() ? nullptr : tensor_,
                               slot.shardDegree ? nullptr : context_};
    if (std::all_of(std::begin(groups), std::end(groups),
                    [](Communicator *c) { return !c || c->size() == 1; }))
      continue; // nothing to copy (and no host round trip of the weights)
    StatusOr<HostTensor> value = session.getParam(slot.name);
    if (!value.ok())
      return value.status();
    for (Communicator *group : groups)
      if (group && group->size() > 1)
        if (Status s = group->broadcast(value->data(), value->byteSize(), DType::U8, 0); !s)
          return s.withPrefix("broadcasting parameter '" + percentEncode(slot.name) + "': ");
    if (Status s = session.setParam(slot.name, *value); !s)
      return s;
  }
  return Status::success();
}

StatusOr<HostTensor> DistributedRun::readFull(Session &session, const Slot &slot) {
  StatusOr<HostTensor> mine = readSlot(session, slot);
  if (!mine.ok() || (!slot.shardDegree && !slot.isSplit()))
    return mine;
  return gatherLogical(slot, *mine);
}

StatusOr<HostTensor> DistributedRun::gatherLogical(const Slot &slot, const HostTensor &mine) {
  const std::string name = "'" + percentEncode(slot.name) + "'";
  auto checkGroup = [&](const char *how, int64_t degree, const char *group, Communicator &comm) {
    if (degree == comm.size())
      return Status::success();
    return Status::error("slot " + name + " is " + how + " over " + std::to_string(degree) +
                         " ranks, the " + group + " group has " + std::to_string(comm.size()));
  };
  if (mine.dtype != slot.dtype || mine.numElements() != slot.numElements)
    return Status::error("slot " + name + " holds " + std::to_string(slot.numElements) +
                         " elements of " + dtypeName(slot.dtype));
  // First the shard group: the chunks of the local tensor (padding dropped).
  HostTensor local;
  const HostTensor *part = &mine;
  if (slot.shardDegree) {
    if (Status s = checkGroup("sharded", slot.shardDegree, "shard", *shard_); !s)
      return s;
    HostTensor gathered;
    if (Status s = gathered.allocate(slot.dtype, {slot.numElements * slot.shardDegree}); !s)
      return s;
    if (Status s = shard_->allGather(mine.data(), gathered.data(), mine.byteSize(), DType::U8);
        !s)
      return s.withPrefix("gathering " + name + ": ");
    if (Status s = local.allocate(slot.dtype, slot.localShape()); !s)
      return s;
    std::memcpy(local.data(), gathered.data(), local.byteSize());
    part = &local;
  }
  if (!slot.isSplit())
    return local;
  // Then the tensor group: the parts, in tensor-rank order, assembled.
  if (Status s = checkGroup("split", slot.split.degree, "tensor", *tensor_); !s)
    return s;
  HostTensor parts, full;
  if (Status s = parts.allocate(slot.dtype, {slot.localElements() * slot.split.degree}); !s)
    return s;
  if (Status s = tensor_->allGather(part->data(), parts.data(), part->byteSize(), DType::U8); !s)
    return s.withPrefix("gathering " + name + " over the tensor group: ");
  if (Status s = full.allocate(slot.dtype, slot.splitShape); !s)
    return s;
  for (int64_t t = 0; t < slot.split.degree; ++t)
    placeSplitPart(static_cast<const char *>(parts.data()) + size_t(t) * part->byteSize(),
                   full.data(), slot.splitShape, dtypeSize(slot.dtype), slot.split, t);
  return full;
}

Status DistributedRun::writeFull(Session &session, const Slot &slot, const HostTensor &full) {
  if (!slot.shardDegree && !slot.isSplit())
    return writeSlot(session, slot, full);
  StatusOr<HostTensor> mine = partOf(slot, full);
  if (!mine.ok())
    return mine.status();
  return writeSlot(session, slot, *mine);
}

StatusOr<HostTensor> DistributedRun::partOf(const Slot &slot, const HostTensor &full) const {
  if (full.numElements() != slot.tensorElements() || full.dtype != slot.dtype)
    return Status::error("'" + percentEncode(slot.name) + "' expects " +
                         std::to_string(slot.tensorElements()) + " elements of " +
                         dtypeName(slot.dtype));
  // This tensor rank's part of a split slot, then its shard's chunk.
  HostTensor local, mine;
  const HostTensor *part = &full;
  if (slot.isSplit()) {
    if (tensorIndex() >= slot.split.degree)
      return Status::error("'" + percentEncode(slot.name) + "' is split over " +
                           std::to_string(slot.split.degree) + " tensor ranks; tensor rank " +
                           std::to_string(tensorIndex()) + " has no part");
    if (Status s = local.allocate(slot.dtype, slot.localShape()); !s)
      return s;
    takeSplitPart(full.data(), local.data(), slot.splitShape, dtypeSize(slot.dtype), slot.split,
                  tensorIndex());
    if (!slot.shardDegree)
      return local;
    part = &local;
  }
  if (Status s = mine.allocate(slot.dtype, slot.shape); !s)
    return s;
  size_t first = std::min(size_t(shardIndex()) * mine.byteSize(), part->byteSize());
  size_t bytes = std::min(mine.byteSize(), part->byteSize() - first);
  if (bytes)
    std::memcpy(mine.data(), static_cast<const char *>(part->data()) + first, bytes);
  return mine;
}

Status DistributedRun::shareVerdict(const Status &verdict) {
  if (size() == 1)
    return verdict;
  int64_t ok = !isRoot() || verdict.ok() ? 1 : 0;
  if (Status s = world_->broadcast(&ok, 1, DType::I64, 0); !s)
    return s;
  if (isRoot())
    return verdict;
  return ok ? Status::success() : Status::reported();
}

Status DistributedRun::broadcastText(std::string &text, int root) {
  int64_t size = int64_t(text.size());
  if (Status s = world_->broadcast(&size, 1, DType::I64, root); !s)
    return s;
  text.resize(size_t(size));
  return world_->broadcast(text.data(), text.size(), DType::U8, root);
}

Status DistributedRun::agree(const Status &local) {
  if (size() == 1)
    return local;
  int64_t mine = local.ok() ? size() : rank(), first = 0;
  if (Status s = world_->allReduce(&mine, &first, 1, DType::I64, ReduceOp::Min); !s)
    return s;
  if (first == size())
    return Status::success();
  std::string message = rank() == first ? local.message() : "";
  if (Status s = broadcastText(message, int(first)); !s)
    return s;
  if (!isRoot())
    return Status::reported();
  return Status::error(first == 0 ? message : "rank " + std::to_string(first) + ": " + message);
}

Status DistributedRun::leaveAlone(const Status &s) {
  if (s.ok() || size() == 1 || s.message().empty())
    return s;
  rt::leaveMpiWithoutFinalize();
  // This error is the job's line: the peers' watchdogs then end quietly.
  rt::markReportedExit();
  return s.withPrefix("rank " + std::to_string(rank()) + ": ");
}

Status DistributedRun::shareArtifact(bool compiled, std::string &artifactDir,
                                     int64_t &vocabSize) {
  int64_t header[2] = {compiled ? 1 : 0, vocabSize};
  if (Status s = world_->broadcast(header, 2, DType::I64, 0); !s)
    return s.withPrefix("sharing the compiled step: ");
  if (!header[0]) // rank 0 printed why; one error per job
    return isRoot() ? Status::error("the model did not compile") : Status::reported();
  vocabSize = header[1];
  std::string dir;
  if (!isRoot()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "trc-run-rank-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      return Status::error("cannot create a temporary folder for the compiled step");
    dir = pattern + "/artifact";
    std::error_code ec;
    std::filesystem::create_directory(dir, ec);
    if (ec)
      return Status::error("cannot create " + dir + ": " + ec.message());
    artifactDir = dir;
  }
  // Every file of the artifact (a cuda step has its kernel images too).
  auto shareBytes = [&](std::string &bytes) {
    if (Status s = broadcastText(bytes); !s)
      return s.withPrefix("sharing the compiled step: ");
    return Status::success();
  };
  std::string names;
  if (isRoot()) {
    std::vector<std::string> files;
    std::error_code ec;
    // A pipeline step is a folder of stage programs: relative paths.
    for (const auto &entry : std::filesystem::recursive_directory_iterator(artifactDir, ec))
      if (entry.is_regular_file())
        files.push_back(
            std::filesystem::relative(entry.path(), artifactDir).generic_string());
    if (ec)
      return Status::error("cannot list " + artifactDir + ": " + ec.message());
    std::sort(files.begin(), files.end());
    for (const std::string &f : files)
      names += f + "\n";
  }
  if (Status s = shareBytes(names); !s)
    return s;
  for (std::string_view member : splitText(names, '\n')) {
    if (member.empty())
      continue;
    std::string path = artifactDir + "/" + std::string(member), bytes;
    if (isRoot()) {
      std::ifstream in(path, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
      if (!in.good() && !in.eof())
        return Status::error("cannot read " + path);
    }
    if (Status s = shareBytes(bytes); !s)
      return s;
    if (!isRoot()) {
      std::error_code ec;
      std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
      if (member.find("..") != std::string_view::npos || ec)
        return Status::error("cannot create the folder of " + path);
      if (Status s = writeFileAtomic(path, bytes, systemFileSystem()); !s)
        return s;
    }
  }
  return Status::success();
}

} // namespace trc::rt
