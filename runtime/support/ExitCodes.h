//===- ExitCodes.h - what a trc process's exit status tells its launcher --===//
//
// The statuses a supervising launcher (trc-launch) acts on, spelled once:
// an error the process named (bad input, a full disk, a diverged run) ends
// with kExitError, and a relaunch would meet it again; a rank that ends
// because another rank of its job is gone, stopped or silent (the watchdog,
// comm/Watchdog.h) ends with kExitRankLost, sysexits' EX_TEMPFAIL: the job
// can continue from its last checkpoint once relaunched. Launchers report a
// rank killed by signal N as 128 + N (mpirun and srun both do).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_SUPPORT_EXITCODES_H
#define TRC_RUNTIME_SUPPORT_EXITCODES_H

namespace trc::rt {

constexpr int kExitError = 1;
constexpr int kExitRankLost = 75;
// Exit statuses above this are a launcher's report of a signal: 128 + N.
constexpr int kExitSignalBase = 128;

} // namespace trc::rt

#endif // TRC_RUNTIME_SUPPORT_EXITCODES_H
