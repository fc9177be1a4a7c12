//===- Calibrate.h - trc-run --calibrate: measure this machine -*- C++ -*-===//
//
//   trc-run --calibrate [--calibrate-out PROFILE.json] [--device cpu]
//   mpirun -np N trc-run --calibrate --calibrate-out PROFILE.json
//
// Measures the constants the planner's cost model needs (lib/Plan,
// ProfileFile.h) with the runtime's own code, every rank at once, so the
// numbers are what each of N ranks sharing this node gets:
// - matrix products through trc_rt_matmul_f32 (the BLAS the programs
//   call), over transformer-like shapes in the three forms training runs
//   (C = A B, dA = dC B^T, dB = A^T dC), fitted as FLOPs, bytes and calls;
// - memory-bound kernels: compiled trc programs (the kernel probe, with
//   the compiler) at three sizes, fitted per byte and per op of unfused
//   traffic; the runtime-only build times a streaming loop instead
//   ("probe": "stream", an optimistic bound);
// - with N > 1, MPI all-reduce, all-gather and reduce-scatter in groups of
//   every size dividing N (all groups at once), and point-to-point
//   messages between pairs, fitted as latency + bytes / bandwidth.
// Each measurement runs for three fixed time windows on every rank; the
// median window of the slowest rank counts. Rank 0 writes the profile: into PROFILE.json (its
// entry for N ranks replaces one measured before, other entries stay), or
// to stdout; a summary goes to stderr.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_CALIBRATE_H
#define TRC_PLAN_CALIBRATE_H

#include "runtime/comm/Communicator.h"
#include "runtime/support/Status.h"
#include "trc/Plan/Fit.h"

#include <functional>
#include <string>
#include <vector>

namespace trc {

/// Times the compiled kernel probe at `rows` rows: its unfused ops and
/// bytes and the seconds of one run, run while every rank of `world` does
/// the same (the slowest rank's time). Null in the runtime-only build.
using KernelProbe =
    std::function<rt::StatusOr<plan::KernelSample>(int64_t rows, rt::Communicator &world)>;

struct CalibrateOptions {
  std::string outPath; // "" : stdout
  std::string device = "cpu";
  double windowSeconds = 0.05; // each measurement's time window
};

rt::Status runCalibration(const CalibrateOptions &options, const KernelProbe &probe);

/// Runs `body` on every rank repeatedly for three windows of `window`
/// seconds (at least twice each) and returns the median window's seconds
/// per call on the slowest rank (collective over `world`; `body` must not
/// itself communicate on `world`).
rt::StatusOr<double> timeOnEveryRank(rt::Communicator &world, double window,
                                     const std::function<void()> &body);

} // namespace trc

#endif // TRC_PLAN_CALIBRATE_H
