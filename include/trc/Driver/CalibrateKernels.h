//===- CalibrateKernels.h - the compiled kernel probe -----------*- C++ -*-===//
//
// With the compiler, trc-run --calibrate times trc's own compiled kernels
// (CalibrateKernels.cpp): a probe program at `rows` rows, its unfused ops
// and bytes counted as trc-print-fusion-summary counts them, timed on
// every rank of `world` at once for `window` seconds (the slowest rank's
// seconds per run).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_CALIBRATEKERNELS_H
#define TRC_DRIVER_CALIBRATEKERNELS_H

#include "trc/Plan/Calibrate.h"

namespace trc {

rt::StatusOr<plan::KernelSample> runKernelProbe(int64_t rows, rt::Communicator &world,
                                                double window);

} // namespace trc

#endif // TRC_DRIVER_CALIBRATEKERNELS_H
