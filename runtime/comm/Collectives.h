//===- Collectives.h - the collectives compiled programs call --------------===//
//
// Compiled training steps (trc-collectives-to-runtime-call) call the
// extern "C" trc_rt_* entries below with codes from CollectiveAbi.h and
// buffer addresses as integers. They run on the process's communicators,
// registered once by the driver (trc-run) with setCollectiveGroups: the
// data axis's groups (CollectiveAbi.h: "world" is every rank with this
// process's tensor index, the whole world without tensor parallelism; the
// shard group, the ranks one sharded tensor is split over; the replica
// group, the ranks holding the same shard) and the tensor group (the ranks
// that hold the parts of one split tensor). Without registration every
// group is this process alone (a plain process runs a data-parallel
// artifact as world size 1).
//
// A C entry cannot return a Status: the first failure (a lost peer, a group
// whose size differs from the `shards` the program was compiled for) is
// kept, later collectives do nothing, and Session::run reports it through
// takeCollectiveError().
// Preconditions: one thread runs programs at a time (communicators are not
// re-entrant); the communicators outlive the programs' runs.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COLLECTIVES_H
#define TRC_RUNTIME_COLLECTIVES_H

#include "runtime/backends/Backend.h"
#include "runtime/comm/Communicator.h"

#include <cstdint>

extern "C" {
void trc_rt_all_reduce(int64_t group, int64_t dtype, int64_t reduction, int64_t count,
                       int64_t send, int64_t recv);
void trc_rt_reduce_scatter(int64_t group, int64_t dtype, int64_t reduction, int64_t shards,
                           int64_t recvCount, int64_t send, int64_t recv);
void trc_rt_all_gather(int64_t group, int64_t dtype, int64_t shards, int64_t sendCount,
                       int64_t send, int64_t recv);
void trc_rt_broadcast(int64_t group, int64_t dtype, int64_t root, int64_t count,
                      int64_t send, int64_t recv);
void trc_rt_shard_slice(int64_t group, int64_t dtype, int64_t shards, int64_t recvCount,
                        int64_t send, int64_t recv);
void trc_rt_collective_permute(int64_t group, int64_t dtype, int64_t shards, int64_t shift,
                               int64_t count, int64_t send, int64_t recv);
// Started collectives (Communicator::start): the entries above plus the
// ticket trc_rt_collective_finish names; between the two the program neither
// writes `send` nor reads `recv` (finish takes both so that the memory plan
// keeps them).
void trc_rt_all_reduce_start(int64_t group, int64_t dtype, int64_t reduction, int64_t count,
                             int64_t send, int64_t recv, int64_t ticket);
void trc_rt_reduce_scatter_start(int64_t group, int64_t dtype, int64_t reduction,
                                 int64_t shards, int64_t recvCount, int64_t send, int64_t recv,
                                 int64_t ticket);
void trc_rt_all_gather_start(int64_t group, int64_t dtype, int64_t shards, int64_t sendCount,
                             int64_t send, int64_t recv, int64_t ticket);
void trc_rt_collective_permute_start(int64_t group, int64_t dtype, int64_t shards,
                                     int64_t shift, int64_t count, int64_t send, int64_t recv,
                                     int64_t ticket);
void trc_rt_collective_finish(int64_t ticket, int64_t send, int64_t recv);
}

namespace trc::rt {

/// The communicators of CollectiveAbi.h's groups (null: this process
/// alone); `world` is the data-axis group.
void setCollectiveGroups(Communicator *world, Communicator *shard, Communicator *replica,
                         Communicator *tensor);

/// The pipeline group (the ranks holding one replica's stages; null: no
/// pipeline), set apart from the others so their callers stay unchanged.
void setPipelineGroup(Communicator *pipeline);

/// The context group (the ranks holding the other parts of my rows'
/// sequences; null: no context parallelism) and the data x context group
/// (the data-axis group itself without context parallelism).
void setContextGroups(Communicator *context, Communicator *dataContext);

/// The backend whose buffers the programs pass (their local copies go
/// through it: device memory on a GPU); null: host memory.
void setCollectiveBackend(Backend *backend);

/// The first collective failure since the last call (then cleared).
Status takeCollectiveError();

/// Addresses of the entries above (keeps them linked; see runtimeExports).
const void *const *collectiveExports();

} // namespace trc::rt

#endif // TRC_RUNTIME_COLLECTIVES_H
