//===- VjpMissingRule.cpp - an op without a VJP rule does not build -------===//
//
// Compiled only by the ctest `vjp-rule-missing-does-not-build`, which passes
// when the compiler stops here with the check's message: the same check
// lib/Training/RegisterVjpRules.cpp runs over the dialect's op list, run over
// that list plus an op with neither a rule nor the NoVjp trait, i.e. what
// adding an op to dialects/Trc/*.td without its rule does to the build.
//
//===----------------------------------------------------------------------===//
#include "VjpRules.h"

namespace {
/// What ODS would make of a new op added without a rule or NoVjp.
class OpWithoutRule : public mlir::Op<OpWithoutRule, mlir::OpTrait::OneResult> {
public:
  using Op::Op;
};
} // namespace

static_assert(trc::autodiff::checkVjpRules<
#define GET_OP_LIST
#include "TrcOps.cpp.inc"
              , OpWithoutRule>());
