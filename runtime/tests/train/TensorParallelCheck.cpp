//===- TensorParallelCheck.cpp - a tensor-parallel run's ranks, per process -===//
//
// trc-tensor-parallel-check CONFIG: run by MpiLaunchTest.cpp under mpirun,
// one process per rank. Creates the DistributedRun of the --config CONFIG
// (JSON with tensor_parallel_degree T, maybe zero_stage) and checks:
//   * the grid: tensor index r % T, data index r / T; the tensor group is
//     the T consecutive ranks with my data index, the data axis the ranks
//     with my tensor index (all-gathered world ranks, in order);
//   * the program's collectives (Collectives.h) run on those groups: an
//     all-gather over code 3 (tensor) and code 0 (world = the data axis);
//   * partOf / gatherLogical (what readFull / writeFull do around the
//     session) of a split slot (fused-QKV layout, 3 blocks) and of the
//     same split slot ZeRO-sharded over the data axis (with padding): each
//     rank's value is TensorSplit.h's part (and its chunk), and gathering
//     gives the logical tensor back on every rank.
// Prints "rank R: N checks passed (BACKEND, size S)" or "error: ..." lines
// and exits 1.
//
//===----------------------------------------------------------------------===//
#include "runtime/comm/Collectives.h"
#include "runtime/formats/Manifest.h"
#include "runtime/support/TensorSplit.h"
#include "runtime/train/DistributedRun.h"

#include "trc/Abi/CollectiveAbi.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

using namespace trc::rt;

namespace {

int gRank = 0, gChecks = 0, gFailures = 0;

void expect(bool ok, const std::string &what) {
  ++gChecks;
  if (!ok && ++gFailures <= 30)
    std::fprintf(stderr, "error: rank %d: %s\n", gRank, what.c_str());
}

std::string list(const std::vector<int64_t> &v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : ",") + std::to_string(x);
  return "{" + s + "}";
}

int64_t address(const void *p) { return static_cast<int64_t>(reinterpret_cast<intptr_t>(p)); }

// The world ranks of `group`'s members, in group order.
std::vector<int64_t> members(Communicator &group, int64_t me) {
  std::vector<int64_t> all(size_t(group.size()), -1);
  Status s = group.allGather(&me, all.data(), 1, DType::I64);
  expect(s.ok(), "allGather of ranks: " + s.message());
  return all;
}

void checkGrid(DistributedRun &run) {
  const int r = run.rank(), T = run.config().tensorDegree, n = run.size();
  expect(run.tensorDegree() == T && run.dataDegree() == n / T,
         "degrees " + std::to_string(run.tensorDegree()) + " x " +
             std::to_string(run.dataDegree()));
  expect(run.tensorIndex() == r % T, "tensor index " + std::to_string(run.tensorIndex()));
  expect(run.dataIndex() == r / T, "data index " + std::to_string(run.dataIndex()));
  std::vector<int64_t> tensor, data;
  for (int t = 0; t < T; ++t)
    tensor.push_back(r / T * T + t);
  for (int d = 0; d < n / T; ++d)
    data.push_back(d * T + r % T);
  std::vector<int64_t> gotTensor = members(run.tensorGroup(), r);
  std::vector<int64_t> gotData = members(run.dataGroup(), r);
  expect(gotTensor == tensor, "tensor group " + list(gotTensor) + ", expected " + list(tensor));
  expect(gotData == data, "data axis " + list(gotData) + ", expected " + list(data));
  // The compiled program's view: code 3 is the tensor group, code 0 the
  // data axis.
  std::vector<int64_t> me{r}, viaTensor(tensor.size(), -1), viaWorld(data.size(), -1);
  trc_rt_all_gather(trc::abi::kGroupTensor, trc::abi::kI64, T, 1, address(me.data()),
                    address(viaTensor.data()));
  trc_rt_all_gather(trc::abi::kGroupWorld, trc::abi::kI64, n / T, 1, address(me.data()),
                    address(viaWorld.data()));
  Status s = takeCollectiveError();
  expect(s.ok(), "program collectives: " + s.message());
  expect(viaTensor == tensor, "trc_rt_all_gather over the tensor group: " + list(viaTensor));
  expect(viaWorld == data, "trc_rt_all_gather over the world group: " + list(viaWorld));
}

// A manifest with the slots under test; `shard` > 1 adds a ZeRO-sharded one.
std::string manifestText(int T, int shard, int64_t chunk) {
  std::string t = std::to_string(T), cols = std::to_string(12 / T);
  std::string m = "trc-artifact 1\ntarget cpu\nprogram program.so 1 xxh3:0123456789abcdef\n"
                  "entry trc_entry\narena 0\nweights weights.bin 4096 xxh3:0123456789abcdef\n";
  // qkv: logical [5, 12], 3 blocks of 4 columns, split over T ranks.
  m += "slot 0 param qkv f32 2 5 " + cols + " 0 trainable\n";
  m += "split 0 1 3 " + t + " 2 5 12\n";
  if (shard > 1) {
    m += "slot 1 input adam.m:qkv f32 1 " + std::to_string(chunk) + "\n";
    m += "split 1 1 3 " + t + " 2 5 12\n";
    m += "shard 1 " + std::to_string(shard) + " 2 5 " + cols + "\n";
  }
  return m + "end\n";
}

void checkLogical(DistributedRun &run) {
  const int T = run.config().tensorDegree, shard = run.config().shardDegree;
  const int64_t local = 5 * (12 / T), chunk = (local + shard - 1) / shard;
  StatusOr<Manifest> parsed = parseManifest(manifestText(T, shard, chunk));
  expect(parsed.ok(), "manifest: " + std::string(parsed.ok() ? "" : parsed.status().message()));
  if (!parsed.ok())
    return;
  HostTensor full;
  expect(full.allocate(DType::F32, {5, 12}).ok(), "allocate");
  for (int64_t i = 0; i < 60; ++i)
    full.as<float>()[i] = float(i) + 0.5f;
  StatusOr<HostTensor> expectedPart = splitPart(full, {1, 3, T}, run.tensorIndex());
  expect(expectedPart.ok(), "splitPart");
  if (!expectedPart.ok())
    return;
  for (const Slot &slot : parsed->slots) {
    std::string name = "slot '" + slot.name + "': ";
    StatusOr<HostTensor> mine = run.partOf(slot, full);
    if (!mine.ok()) {
      expect(false, name + "partOf: " + std::string(mine.status().message()));
      continue;
    }
    // This rank's value: its tensor part, then its shard's chunk (zero
    // padding past the part's end).
    std::vector<float> want(size_t(slot.numElements), 0.0f);
    int64_t first = slot.shardDegree ? run.shardIndex() * slot.numElements : 0;
    for (int64_t i = 0; i < slot.numElements && first + i < local; ++i)
      want[size_t(i)] = expectedPart->as<float>()[first + i];
    expect(mine->shape == slot.shape &&
               std::memcmp(mine->data(), want.data(), want.size() * sizeof(float)) == 0,
           name + "this rank's value is not its part" +
               (slot.shardDegree ? std::string(" and chunk") : std::string()));
    StatusOr<HostTensor> back = run.gatherLogical(slot, *mine);
    if (!back.ok()) {
      expect(false, name + "gatherLogical: " + std::string(back.status().message()));
      continue;
    }
    expect(back->shape == full.shape &&
               std::memcmp(back->data(), full.data(), full.byteSize()) == 0,
           name + "the gathered tensor is not the logical one");
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CONFIG_JSON (under mpirun)\n", argv[0]);
    return 2;
  }
  StatusOr<std::unique_ptr<DistributedRun>> created = DistributedRun::create(argv[1]);
  if (!created.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(created.status().message()).c_str());
    return 1;
  }
  DistributedRun &run = **created;
  gRank = run.rank();
  checkGrid(run);
  checkLogical(run);
  expect(run.barrier().ok(), "final barrier");
  if (gFailures) {
    std::fprintf(stderr, "error: rank %d: %d of %d checks failed\n", gRank, gFailures, gChecks);
    return 1;
  }
  std::fprintf(stderr, "rank %d: %d checks passed (tensor-parallel, size %d)\n", gRank, gChecks,
               run.size());
  return 0;
}
