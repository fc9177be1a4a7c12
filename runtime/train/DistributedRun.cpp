//===- DistributedRun.cpp - a training run's ranks (see DistributedRun.h) ----===//
#include "runtime/train/DistributedRun.h"
#include "trc/Abi/SlotNames.h"

#include "runtime/comm/Collectives.h"
#include "runtime/comm/LaunchEnvironment.h"
#include "runtime/formats/FileOps.h"
#include "runtime/support/Names.h"
#include "runtime/support/Parse.h"

#include <algorithm>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>


namespace trc::rt {

namespace {

/// A slot as the session holds it: a param, or an optimizer-state input
/// whose latest value is the step's "update:" output.
StatusOr<HostTensor> readSlot(Session &session, const Slot &slot) {
  if (slot.kind == SlotKind::Param)
    return session.getParam(slot.name);
  return session.getOutput(abi::kUpdatePrefix + slot.name);
}

Status writeSlot(Session &session, const Slot &slot, const HostTensor &value) {
  if (slot.kind == SlotKind::Param)
    return session.setParam(slot.name, value);
  return session.setInput(slot.name, value);
}

/// Shard groups are consecutive blocks of `degree` ranks; replica groups
/// take the ranks at the same position in each block.
Status splitGroups(Communicator &world, int degree, std::unique_ptr<Communicator> &shard,
                   std::unique_ptr<Communicator> &replica) {
  int r = world.rank();
  StatusOr<std::unique_ptr<Communicator>> shardGroup = world.split(r / degree, r);
  if (!shardGroup.ok())
    return Status(shardGroup.status()).withPrefix("shard groups: ");
  shard = *std::move(shardGroup);
  StatusOr<std::unique_ptr<Communicator>> replicaGroup = world.split(r % degree, r);
  if (!replicaGroup.ok())
    return Status(replicaGroup.status()).withPrefix("replica groups: ");
  replica = *std::move(replicaGroup);
  return Status::success();
}

} // namespace

DistributedRun::~DistributedRun() { setCollectiveGroups(nullptr, nullptr, nullptr); }

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
    return plan.status();
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
  if (Status s = splitGroups(*run->world_, run->config_.shardDegree, run->shard_,
                             run->replica_);
      !s)
    return s;
  if (nccl) {
    StatusOr<std::unique_ptr<Communicator>> deviceWorld = createCommunicator("nccl");
    if (!deviceWorld.ok())
      return Status(deviceWorld.status()).withPrefix("--config communicator: ");
    run->deviceWorld_ = *std::move(deviceWorld);
    if (Status s = splitGroups(*run->deviceWorld_, run->config_.shardDegree,
                               run->deviceShard_, run->deviceReplica_);
        !s)
      return s;
  }
  run->dataParallel_ = run->world_->size() > 1 || !configSpec.empty();
  if (nccl)
    setCollectiveGroups(run->deviceWorld_.get(), run->deviceShard_.get(),
                        run->deviceReplica_.get());
  else
    setCollectiveGroups(run->world_.get(), run->shard_.get(), run->replica_.get());
  return run;
}

DataParallelBuild DistributedRun::dataParallelBuild() const {
  DataParallelBuild dp;
  dp.zeroStage = config_.zeroStage;
  dp.shardDegree = config_.shardDegree;
  dp.bucketMb = config_.bucketCapMb;
  dp.hybrid = config_.zeroStage >= 2 && config_.replicas() > 1;
  return dp;
}

Status DistributedRun::broadcastParameters(Session &session) {
  for (const Slot &slot : session.manifest().slots) {
    if (slot.kind != SlotKind::Param)
      continue;
    // A shard's owners in the other copies are its replica group.
    Communicator &group = slot.shardDegree ? *replica_ : *world_;
    if (group.size() == 1)
      continue; // nothing to copy (and no host round trip of the weights)
    StatusOr<HostTensor> value = session.getParam(slot.name);
    if (!value.ok())
      return value.status();
    if (Status s = group.broadcast(value->data(), value->byteSize(), DType::U8, 0); !s)
      return s.withPrefix("broadcasting parameter '" + percentEncode(slot.name) + "': ");
    if (Status s = session.setParam(slot.name, *value); !s)
      return s;
  }
  return Status::success();
}

StatusOr<HostTensor> DistributedRun::readFull(Session &session, const Slot &slot) {
  if (!slot.shardDegree)
    return readSlot(session, slot);
  StatusOr<HostTensor> mine = readSlot(session, slot);
  if (!mine.ok())
    return mine.status();
  HostTensor gathered;
  if (slot.shardDegree != shard_->size())
    return Status::error("slot '" + percentEncode(slot.name) + "' is sharded over " +
                         std::to_string(slot.shardDegree) + " ranks, the shard group has " +
                         std::to_string(shard_->size()));
  if (Status s = gathered.allocate(slot.dtype, {slot.numElements * slot.shardDegree}); !s)
    return s;
  if (Status s = shard_->allGather(mine->data(), gathered.data(), mine->byteSize(), DType::U8);
      !s)
    return s.withPrefix("gathering '" + percentEncode(slot.name) + "': ");
  HostTensor out;
  if (Status s = out.allocate(slot.dtype, slot.fullShape); !s)
    return s;
  std::memcpy(out.data(), gathered.data(), out.byteSize()); // drops the padding
  return out;
}

Status DistributedRun::writeFull(Session &session, const Slot &slot, const HostTensor &full) {
  if (!slot.shardDegree)
    return writeSlot(session, slot, full);
  if (full.numElements() != slot.fullElements || full.dtype != slot.dtype)
    return Status::error("'" + percentEncode(slot.name) + "' expects " +
                         std::to_string(slot.fullElements) + " elements of " +
                         dtypeName(slot.dtype));
  HostTensor mine;
  if (Status s = mine.allocate(slot.dtype, slot.shape); !s)
    return s;
  size_t first = std::min(size_t(shardIndex()) * mine.byteSize(), full.byteSize());
  size_t bytes = std::min(mine.byteSize(), full.byteSize() - first);
  if (bytes)
    std::memcpy(mine.data(), static_cast<const char *>(full.data()) + first, bytes);
  return writeSlot(session, slot, mine);
}

Status DistributedRun::shareArtifact(bool compiled, std::string &artifactDir,
                                     int64_t &vocabSize) {
  int64_t header[2] = {compiled ? 1 : 0, vocabSize};
  if (Status s = world_->broadcast(header, 2, DType::I64, 0); !s)
    return s.withPrefix("sharing the compiled step: ");
  if (!header[0])
    return Status::error(isRoot() ? "the model did not compile"
                                  : "rank 0 could not compile the model (see its error)");
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
    int64_t size = int64_t(bytes.size());
    if (Status s = world_->broadcast(&size, 1, DType::I64, 0); !s)
      return s.withPrefix("sharing the compiled step: ");
    bytes.resize(size_t(size));
    if (Status s = world_->broadcast(bytes.data(), bytes.size(), DType::U8, 0); !s)
      return s.withPrefix("sharing the compiled step: ");
    return Status::success();
  };
  std::string names;
  if (isRoot()) {
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto &entry : std::filesystem::directory_iterator(artifactDir, ec))
      if (entry.is_regular_file())
        files.push_back(entry.path().filename().string());
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
    if (!isRoot())
      if (Status s = writeFileAtomic(path, bytes, systemFileSystem()); !s)
        return s;
  }
  return Status::success();
}

} // namespace trc::rt
