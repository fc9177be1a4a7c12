//===- TrcInterfaces.td - the rules every trc op carries ----*- tablegen -*-===//
//
// The per-op rules passes look up through op interfaces rather than tables:
//
//  * VjpOpInterface: the op's vector-Jacobian product, what trc-autodiff
//    applies. Implemented as external models (lib/Training/Vjp*.cpp, attached
//    by trc::autodiff::registerVjpRules, which trc::registerAllDialects
//    calls), so the dialect does not depend on the training library.
//  * NoVjp: the trait of an op that has no VJP rule on purpose.
//
// Every trc op has exactly one of the two, checked when the library builds:
// lib/Training/RegisterVjpRules.cpp walks the dialect's op list (GET_OP_LIST)
// and a static_assert fails for an op with neither a rule nor NoVjp (or with
// both).
//  * ShardingRuleOpInterface: how the op's dims relate as factors (einsum
//    style, Shardy's OpShardingRule), what trc-propagate-sharding and
//    trc-partition read (include/trc/Dialect/ShardingRule.h). External
//    models in lib/Parallel/ShardingRules.cpp, attached by
//    trc::parallel::registerShardingRules; the same compile-time check
//    against the NoSharding trait.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_INTERFACES_TD
#define TRC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Trc_VjpOpInterface : OpInterface<"VjpOpInterface"> {
  let cppNamespace = "::trc";
  let description = [{
    The reverse-mode derivative of a single-result op. `buildVjp` reads the
    op (its operands and result are forward values that stay live) and
    `context.grad`, the gradient of the loss with respect to the result, and
    emits trc ops at the context's insertion point computing the gradient
    with respect to each operand `context.wants(i)`, recorded with
    `context.setGrad(i, g)` (of the operand's exact type). An operand whose
    gradient is identically zero is left unset. The rule is called only when
    at least one operand is wanted; it may emit an error and fail when the
    op's attributes make it non-differentiable. `trc::autodiff::VjpContext`
    (include/trc/Training/Vjp.h) also carries folding builders for the rules.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the gradients of the wanted operands (see the description).
      }],
      "::llvm::LogicalResult", "buildVjp",
      (ins "::trc::autodiff::VjpContext &":$context)>,
  ];
}

// An op without a VJP rule by design: trc-autodiff reports it when it lies on
// a path from a trainable parameter to the loss. Leaves (constant, parameter,
// get_parameter, iota, random_uniform), ops with i1 results (compare, not,
// and, or), ops of later stages (collectives, fusion and its yield,
// attention_grad) and dropout (trc-lower-dropout rewrites it before autodiff).
def Trc_NoVjp : NativeOpTrait<"NoVjp"> {
  let cppNamespace = "::trc";
}

def Trc_ShardingRuleOpInterface : OpInterface<"ShardingRuleOpInterface"> {
  let cppNamespace = "::trc";
  let description = [{
    The op's sharding rule: every dim of every operand and result is a
    product of factors (major to minor); a factor split over a grid axis
    splits every dim it appears in. The factor's kind says what splitting it
    means: parallel (each rank computes its part), a summed or maxed
    reduction (the result is a partial over the axis), replicated (must not
    be split), gathered (gather/scatter_add's table dim: a masked local
    lookup whose result is a partial sum) or sliced (a slice/concatenate
    dim: splittable in whole blocks).
  }];
  let methods = [
    InterfaceMethod<"The op's factors and how its dims map to them.",
      "::trc::ShardingRule", "getShardingRule", (ins)>,
  ];
}

// An op without a sharding rule by design: module-level symbols
// (parameter, get_parameter: trc-parameters-to-arguments runs first), ops
// inserted by or after partitioning (collectives, fusion and its yield) and
// dropout (trc-lower-dropout rewrites it first).
def Trc_NoSharding : NativeOpTrait<"NoSharding"> {
  let cppNamespace = "::trc";
}

#endif // TRC_INTERFACES_TD
