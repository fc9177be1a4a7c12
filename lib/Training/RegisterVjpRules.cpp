//===- RegisterVjpRules.cpp - VJP rules as VjpOpInterface models ----------===//
//
// Every op of the trc dialect's op list (GET_OP_LIST, generated from
// dialects/Trc/*.td) is checked here at compile time: it must have a rule
// (VjpRules.h) or the NoVjp trait, not both. Ops with a rule get an external
// model of VjpOpInterface that calls it, attached when the dialect loads.
//
//===----------------------------------------------------------------------===//
#include "VjpRules.h"

#include "mlir/IR/MLIRContext.h"

using namespace mlir;

namespace trc::autodiff {
namespace {

/// VjpOpInterface for OpT through its rule.
template <typename OpT>
struct VjpModel : VjpOpInterface::ExternalModel<VjpModel<OpT>, OpT> {
  LogicalResult buildVjp(Operation *op, VjpContext &context) const {
    return vjp(cast<OpT>(op), context);
  }
};

template <typename OpT>
void attachRule(MLIRContext *context) {
  if constexpr (hasVjpRule<OpT>)
    OpT::template attachInterface<VjpModel<OpT>>(*context);
}

template <typename... OpTs>
void attachRules(MLIRContext *context) {
  static_assert(checkVjpRules<OpTs...>());
  (attachRule<OpTs>(context), ...);
}

void attachAllRules(MLIRContext *context, TrcDialect *) {
  attachRules<
#define GET_OP_LIST
#include "TrcOps.cpp.inc"
      >(context);
}

} // namespace

void registerVjpRules(DialectRegistry &registry) {
  registry.addExtension(&attachAllRules);
}

} // namespace trc::autodiff
