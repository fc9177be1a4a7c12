//===- RankThreads.h - how many threads each rank of a node uses -*- C++ -*-===//
//
// A rank runs matrix products on the runtime's thread pool (ThreadPool.h)
// and its compiled programs' loops on OpenMP; both default to every core of
// the machine. Several ranks on one node then run cores x ranks threads,
// which spin-wait on one another (OpenMP's barriers, the BLAS pool) and made
// 4 data-parallel ranks on 2 cores 5x slower than 1 thread each.
//
// threadsPerRank picks a rank's share: the cores it may run on when the
// launcher bound it to fewer than the machine's (mpirun -np 2 binds each
// rank to one core), else the machine's cores divided by the ranks on the
// node, at least 1. applyRankThreads sets TRC_NUM_THREADS and
// OMP_NUM_THREADS to it, once, at the start of a process, before the pool
// or any program's OpenMP runtime starts. When the user set either
// variable both are left as they are, and so is a single process
// (localSize 1).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_COMM_RANKTHREADS_H
#define TRC_RUNTIME_COMM_RANKTHREADS_H

#include "runtime/support/Status.h"

namespace trc::rt {

/// Preconditions: onlineCores >= 1, 1 <= allowedCores (the affinity mask),
/// localSize >= 1 (ranks of this node).
int threadsPerRank(int localSize, int onlineCores, int allowedCores);

/// The runtime's environment variables, all checked in one place at a
/// tool's start, before libomp, the thread pool or a communicator reads
/// them: TRC_NUM_THREADS and OMP_NUM_THREADS (ThreadPool.h), TRC_CPU_GEMM
/// (Blas.h), TRC_COLLECTIVE_TIMEOUT_S (Watchdog.h) and the launcher's rank
/// variables (LaunchEnvironment.h), and the room libomp needs in /dev/shm
/// (ThreadPool.h). The error names the variable and its value, or the
/// folder and its free bytes.
Status checkEnvironment();

/// The threads this process uses: the value applied, or the pool's
/// (ThreadPool.h) when nothing was changed. Runs checkEnvironment first;
/// errors name the bad variable.
StatusOr<int> applyRankThreads();

} // namespace trc::rt

#endif // TRC_RUNTIME_COMM_RANKTHREADS_H
