//===- VjpRules.h - the VJP rule of each trc op -----------------*- C++ -*-===//
//
// One overload `vjp(XOp, VjpContext &)` per differentiable trc op, defined in
// the family files listed in include/trc/Training/Vjp.h, and the compile-time
// check that ties them to the dialect: RegisterVjpRules.cpp instantiates
// checkVjpRule<Op>() for every op of GET_OP_LIST, so an op added to
// dialects/Trc/*.td without a rule here (or the NoVjp trait there) stops the
// library from compiling. A rule declared here but never defined fails at
// link time.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_TRAINING_VJPRULES_H
#define TRC_LIB_TRAINING_VJPRULES_H

#include "trc/Training/Vjp.h"

#include <type_traits>
#include <utility>

namespace trc::autodiff {

// VjpElementwise.cpp
mlir::LogicalResult vjp(AddOp op, VjpContext &c);
mlir::LogicalResult vjp(SubOp op, VjpContext &c);
mlir::LogicalResult vjp(MulOp op, VjpContext &c);
mlir::LogicalResult vjp(DivOp op, VjpContext &c);
mlir::LogicalResult vjp(PowOp op, VjpContext &c);
mlir::LogicalResult vjp(NegOp op, VjpContext &c);
mlir::LogicalResult vjp(AbsOp op, VjpContext &c);
mlir::LogicalResult vjp(ExpOp op, VjpContext &c);
mlir::LogicalResult vjp(LogOp op, VjpContext &c);
mlir::LogicalResult vjp(SqrtOp op, VjpContext &c);
mlir::LogicalResult vjp(RsqrtOp op, VjpContext &c);
mlir::LogicalResult vjp(TanhOp op, VjpContext &c);
mlir::LogicalResult vjp(ErfOp op, VjpContext &c);
mlir::LogicalResult vjp(SinOp op, VjpContext &c);
mlir::LogicalResult vjp(CosOp op, VjpContext &c);
mlir::LogicalResult vjp(LogisticOp op, VjpContext &c);
mlir::LogicalResult vjp(FloorOp op, VjpContext &c);
mlir::LogicalResult vjp(MaxOp op, VjpContext &c);
mlir::LogicalResult vjp(MinOp op, VjpContext &c);
mlir::LogicalResult vjp(SelectOp op, VjpContext &c);
mlir::LogicalResult vjp(ConvertOp op, VjpContext &c);

// VjpContraction.cpp
mlir::LogicalResult vjp(DotGeneralOp op, VjpContext &c);
mlir::LogicalResult vjp(ReduceOp op, VjpContext &c);

// VjpDataMovement.cpp
mlir::LogicalResult vjp(BroadcastInDimOp op, VjpContext &c);
mlir::LogicalResult vjp(TransposeOp op, VjpContext &c);
mlir::LogicalResult vjp(ReshapeOp op, VjpContext &c);
mlir::LogicalResult vjp(OptimizationBarrierOp op, VjpContext &c);
mlir::LogicalResult vjp(SliceOp op, VjpContext &c);
mlir::LogicalResult vjp(ReverseOp op, VjpContext &c);
mlir::LogicalResult vjp(ConcatenateOp op, VjpContext &c);
mlir::LogicalResult vjp(PadOp op, VjpContext &c);
mlir::LogicalResult vjp(GatherOp op, VjpContext &c);
mlir::LogicalResult vjp(ScatterAddOp op, VjpContext &c);

// VjpComposite.cpp
mlir::LogicalResult vjp(SoftmaxOp op, VjpContext &c);
mlir::LogicalResult vjp(LogSoftmaxOp op, VjpContext &c);
mlir::LogicalResult vjp(LayerNormOp op, VjpContext &c);
mlir::LogicalResult vjp(GeluOp op, VjpContext &c);
mlir::LogicalResult vjp(CrossEntropyOp op, VjpContext &c);
mlir::LogicalResult vjp(AttentionOp op, VjpContext &c);

namespace detail {
template <typename OpT, typename = void>
struct HasVjpRule : std::false_type {};
template <typename OpT>
struct HasVjpRule<OpT, std::void_t<decltype(vjp(std::declval<OpT>(),
                                                std::declval<VjpContext &>()))>>
    : std::true_type {};
} // namespace detail

/// Whether `vjp(OpT, VjpContext &)` is declared.
template <typename OpT>
inline constexpr bool hasVjpRule = detail::HasVjpRule<OpT>::value;

/// Whether OpT carries the NoVjp trait (no rule by design).
template <typename OpT>
inline constexpr bool hasNoVjpTrait = OpT::template hasTrait<::trc::NoVjp>();

/// Compiles only when OpT has exactly one of a rule and the NoVjp trait.
template <typename OpT>
constexpr bool checkVjpRule() {
  static_assert(hasVjpRule<OpT> || hasNoVjpTrait<OpT>,
                "this trc op has no VJP rule: declare and define "
                "vjp(Op, VjpContext &) (lib/Training/VjpRules.h) or give the op "
                "the Trc_NoVjp trait (dialects/Trc/TrcInterfaces.td)");
  static_assert(!(hasVjpRule<OpT> && hasNoVjpTrait<OpT>),
                "this trc op has a VJP rule and the Trc_NoVjp trait: drop one");
  return true;
}

/// The compile-time check over a list of ops (GET_OP_LIST).
template <typename... OpTs>
constexpr bool checkVjpRules() {
  return (checkVjpRule<OpTs>() && ...);
}

} // namespace trc::autodiff

#endif // TRC_LIB_TRAINING_VJPRULES_H
