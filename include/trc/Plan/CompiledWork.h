//===- CompiledWork.h - a compiled training step's work, per stage -*- C++ -*-===//
//
// What the compiler counts in a training step whose ops carry pipeline
// stages (trc/Parallel/StageWork.h makes it; the planner prices it): per
// stage and phase (forward, backward for inputs, backward for weights), the
// matrix products by shape, the other kernels by count and by the bytes
// they would move unfused (every operand read and result written: the
// fusion cost model's "before" traffic), and the collectives by kind,
// group and bytes; per stage, the parameters it holds, the activations its
// forward keeps for its backward (stash) and what it passes to the next
// stage. Plain data: no MLIR, so lib/Plan reads it.
// Counts are per rank for one microbatch of the shape the step was compiled
// for, in the step's own types: the planner compiles steps in fp32
// (trc/Driver/CompiledModelWork.h), so its bytes are kCompiledFloatBytes per
// element.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_COMPILEDWORK_H
#define TRC_PLAN_COMPILEDWORK_H

#include <string>
#include <vector>

namespace trc::plan {

constexpr double kCompiledFloatBytes = 4;

/// `batch` products of an (m x k) matrix by a (k x n) one.
struct ProductShape {
  double m = 0, n = 0, k = 0, batch = 1;
  double flops() const { return 2 * m * n * k * batch; }
};

// Permute: a ring step (each rank sends to one and receives from another).
enum class CommKind { AllReduce, AllGather, ReduceScatter, Permute, Other };
inline const char *commKindName(CommKind kind) {
  switch (kind) {
  case CommKind::AllReduce: return "all_reduce";
  case CommKind::AllGather: return "all_gather";
  case CommKind::ReduceScatter: return "reduce_scatter";
  case CommKind::Permute: return "collective_permute";
  case CommKind::Other: break;
  }
  return "other";
}

struct CommWork {
  CommKind kind = CommKind::Other;
  std::string group; // the trc dialect's group name: tensor, data, shard, world...
  double bytes = 0;  // the larger of what a rank sends in and gets out
};

/// One phase of one stage.
struct PhaseWork {
  std::vector<ProductShape> products;
  double kernels = 0;     // other kernels (not products, not collectives)
  double kernelBytes = 0; // their unfused traffic
  std::vector<CommWork> collectives;
  double productFlops() const {
    double f = 0;
    for (const ProductShape &p : products)
      f += p.flops();
    return f;
  }
  double commBytes() const {
    double b = 0;
    for (const CommWork &c : collectives)
      b += c.bytes;
    return b;
  }
};

enum class WorkPhase { Forward = 0, Backward = 1, Weights = 2 };
constexpr int kWorkPhases = 3;

struct StageWork {
  PhaseWork phases[kWorkPhases];
  double forwardCost = 0; // what trc-pipeline-stages balances (Layers.h's opCost)
  // Trained parameters (a gradient each) of the stage's copies.
  double paramBytes = 0, paramTensors = 0, paramElements = 0;
  double stashBytes = 0;   // forward values the stage's backward reads
  double sendBytes = 0;    // forward values later stages read
  const PhaseWork &phase(WorkPhase p) const { return phases[int(p)]; }
  PhaseWork &phase(WorkPhase p) { return phases[int(p)]; }
};

struct CompiledWork {
  std::vector<StageWork> stages;
  // Ops no stage owns (masks, positions, constants' arithmetic): every
  // program that reads them computes them again.
  PhaseWork unstaged;
  // Frozen parameters the step updates besides the gradients it returns
  // (BatchNormalization's running statistics).
  double stateUpdates = 0;
};

} // namespace trc::plan

#endif // TRC_PLAN_COMPILEDWORK_H
