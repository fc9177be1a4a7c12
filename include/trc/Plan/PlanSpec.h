//===- PlanSpec.h - a (partial) plan given with trc-plan --plan ---------------===//
//
// parsePlanSpec reads inline JSON (first non-space character '{') or a JSON
// file in ParallelPlan's keys (runtime/spec/ParallelPlan.h: SageMaker's
// names, validated by parseParallelPlan against the cluster's size) plus
// trc-plan's "recompute": "none" | "selective" | "full". Only the keys
// present become Constraints; the search completes the rest. Errors start
// with "--plan: " and name the key.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_PLANSPEC_H
#define TRC_PLAN_PLANSPEC_H

#include "trc/Plan/Search.h"

namespace trc::plan {

rt::Status parsePlanSpec(const std::string &spec, int worldSize, Constraints &out);

} // namespace trc::plan

#endif // TRC_PLAN_PLANSPEC_H
