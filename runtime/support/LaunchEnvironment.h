//===- LaunchEnvironment.h - rank and world size from the launcher ----------===//
//
// Who this process is in a multi-process run, read from the variables the
// launcher exports (nothing is communicated):
//   Open MPI (mpirun)  OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK / _LOCAL_SIZE
//   PMIx               PMIX_RANK (a rank only: the world size comes from
//                      Open MPI's or Slurm's variables, else it is unknown)
//   Slurm (srun)       SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS),
//                      SLURM_LOCALID, and the local size from
//                      SLURM_STEP_TASKS_PER_NODE (else SLURM_TASKS_PER_NODE,
//                      e.g. "2(x3),1") at index SLURM_NODEID
// A plain process (none of these) is rank 0 of 1 and needs no launcher.
//
// Precedence: Open MPI's variables win over Slurm's, which are ignored when
// both are present (mpirun inside an allocation inherits the allocation's
// Slurm variables). Slurm's count only inside a job step, i.e. when
// SLURM_STEP_ID (or SLURM_STEPID) holds a step number: a batch script also
// sees SLURM_PROCID=0 and SLURM_NTASKS=N but is a single process (there
// SLURM_PROCID must still be a number below SLURM_NTASKS).
// PMIX_RANK must agree with OMPI_COMM_WORLD_RANK, or with SLURM_PROCID in a
// Slurm step, when those are set.
//
// Errors (Status, naming the variable): a value that is not a decimal integer
// in range, a rank not below its size, a local size above the world size, a
// rank variable without its size variable, disagreeing ranks.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_LAUNCHENVIRONMENT_H
#define TRC_RUNTIME_LAUNCHENVIRONMENT_H

#include "runtime/support/Status.h"

#include <string>

namespace trc::rt {

enum class Launcher { None, OpenMpi, Pmix, Slurm };

// "none", "Open MPI", "PMIx", "Slurm".
const char *launcherName(Launcher launcher);

struct LaunchEnvironment {
  Launcher launcher = Launcher::None;
  int rank = 0;
  // World size; 0 when unknown (PMIx gave a rank and nothing gave a size).
  int size = 1;
  // Rank among this node's processes and their number; localSize 0 when
  // unknown (localRank is then 0).
  int localRank = 0;
  int localSize = 1;

  bool launched() const { return launcher != Launcher::None; }
  // More than one process, or a launcher that did not say how many.
  bool multiProcess() const { return size != 1; }
  // "rank 1 of 4 (local 1 of 2) under Open MPI", "a single process".
  std::string describe() const;
};

/// The launch environment the process environment (getenv) describes; an
/// error names the bad variable.
StatusOr<LaunchEnvironment> readLaunchEnvironment();

} // namespace trc::rt

#endif // TRC_RUNTIME_LAUNCHENVIRONMENT_H
