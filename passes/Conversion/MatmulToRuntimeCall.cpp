//===- MatmulToRuntimeCall.cpp - trc-matmul-to-runtime-call ---------------===//
//
// linalg.batch_matmul on memrefs -> call @trc_rt_matmul_f32/f64, or
// bf16/f16 operands into an f32 result -> @trc_rt_matmul_bf16/f16 (see
// Passes.td and docs/ARTIFACT.md). Pointers are passed as i64 (the same
// register class as a pointer in the C ABIs trc targets). Matmuls whose
// layouts BLAS cannot take (neither innermost nor row stride 1, dynamic
// strides) are left for the loop lowering. With narrow-results, a bf16
// product whose readers only round its f32 result writes bf16 instead
// (trc_rt_matmul_bf16_bf16; narrowResult below).
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace trc {
#define GEN_PASS_DEF_MATMULTORUNTIMECALL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

/// How BLAS sees one [B, R, C] operand.
struct MatrixLayout {
  int64_t batchStride = 0, leading = 0, offset = 0;
  bool transposed = false;
};

std::optional<MatrixLayout> layoutOf(MemRefType type) {
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset) || llvm::any_of(strides, ShapedType::isDynamic))
    return std::nullopt;
  int64_t batch = type.getDimSize(0), rows = type.getDimSize(1), cols = type.getDimSize(2);
  MatrixLayout l;
  l.offset = offset;
  l.batchStride = batch == 1 ? 0 : strides[0];
  if (strides[2] == 1 || cols == 1) {
    l.leading = rows == 1 ? std::max<int64_t>(cols, 1) : strides[1];
    if (l.leading >= cols)
      return l;
  }
  if (strides[1] == 1 || rows == 1) {
    l.transposed = true;
    l.leading = cols == 1 ? std::max<int64_t>(rows, 1) : strides[2];
    if (l.leading >= rows)
      return l;
  }
  return std::nullopt;
}

/// The linalg.generic operands that read `buffer` through reshapes, or
/// nothing when something else uses it (a copy, a call, a return, a write)
/// besides the `writers` (the product and its zero fill). `views` collects
/// the reshapes, outermost first.
std::optional<SmallVector<OpOperand *>> genericReads(Value buffer,
                                                     ArrayRef<Operation *> writers,
                                                     SmallVector<Operation *> &views) {
  SmallVector<OpOperand *> reads;
  for (OpOperand &use : buffer.getUses()) {
    Operation *user = use.getOwner();
    if (llvm::is_contained(writers, user))
      continue;
    if (isa<memref::ReshapeOp, memref::ExpandShapeOp, memref::CollapseShapeOp>(user) &&
        use.getOperandNumber() == 0) {
      views.push_back(user);
      auto inner = genericReads(user->getResult(0), writers, views);
      if (!inner)
        return std::nullopt;
      llvm::append_range(reads, *inner);
      continue;
    }
    auto generic = dyn_cast<linalg::GenericOp>(user);
    if (!generic || !generic.isDpsInput(&use))
      return std::nullopt;
    reads.push_back(&use);
  }
  return reads;
}

/// Whether the payload uses `operand`'s element only through truncf to
/// `narrow`.
bool onlyRounded(OpOperand *operand, Type narrow) {
  auto generic = cast<linalg::GenericOp>(operand->getOwner());
  BlockArgument arg = generic.getMatchingBlockArgument(operand);
  return llvm::all_of(arg.getUsers(), [&](Operation *user) {
    auto trunc = dyn_cast<arith::TruncFOp>(user);
    return trunc && trunc.getType() == narrow;
  });
}

/// `type` with element `element` (its shape and layout kept).
MemRefType withElement(MemRefType type, Type element) {
  return MemRefType::get(type.getShape(), element, type.getLayout(), type.getMemorySpace());
}

/// The zero linalg.fill of the product's result right before it, if any.
linalg::FillOp zeroFillBefore(linalg::BatchMatmulOp op) {
  auto fill = dyn_cast_or_null<linalg::FillOp>(op->getPrevNode());
  if (!fill || fill.getDpsInits()[0] != op.getDpsInits()[0])
    return {};
  auto zero = fill.getDpsInputs()[0].getDefiningOp<arith::ConstantOp>();
  auto f = zero ? dyn_cast<FloatAttr>(zero.getValue()) : FloatAttr();
  return f && f.getValue().isZero() ? fill : linalg::FillOp();
}

/// For a bf16 product into the f32 arena temporary `c` (zeroed by `fill`)
/// that every reader rounds to bf16 at once: a bf16 view at c's place, the
/// readers moved to it (their reshapes remade, their rounding dropped).
/// Null otherwise.
Value narrowResult(linalg::BatchMatmulOp op, Operation *fill, Value c) {
  auto view = c.getDefiningOp<memref::ViewOp>();
  auto narrow = cast<MemRefType>(op.getDpsInputs()[0].getType()).getElementType();
  if (!view || !view.getSizes().empty() || !narrow.isBF16() ||
      !cast<MemRefType>(c.getType()).getElementType().isF32())
    return Value();
  SmallVector<Operation *> views;
  Operation *writers[] = {op, fill};
  std::optional<SmallVector<OpOperand *>> reads = genericReads(c, writers, views);
  if (!reads || reads->empty() ||
      !llvm::all_of(*reads, [&](OpOperand *read) { return onlyRounded(read, narrow); }))
    return Value();
  OpBuilder b(view);
  b.setInsertionPointAfter(view);
  auto narrowType = withElement(cast<MemRefType>(c.getType()), narrow);
  Value narrowed = memref::ViewOp::create(b, view.getLoc(), narrowType, view.getSource(),
                                          view.getByteShift(), ValueRange{});
  IRMapping map;
  map.map(c, narrowed);
  for (Operation *reshape : views) { // outermost first: each source is mapped
    b.setInsertionPoint(reshape);
    Operation *copy = b.clone(*reshape, map);
    auto result = cast<MemRefType>(reshape->getResult(0).getType());
    copy->getResult(0).setType(withElement(result, narrow));
    map.map(reshape->getResult(0), copy->getResult(0));
  }
  for (OpOperand *read : *reads) {
    auto generic = cast<linalg::GenericOp>(read->getOwner());
    BlockArgument arg = generic.getMatchingBlockArgument(read);
    read->set(map.lookup(read->get()));
    arg.setType(narrow);
    for (Operation *trunc : llvm::make_early_inc_range(arg.getUsers())) {
      trunc->getResult(0).replaceAllUsesWith(arg);
      trunc->erase();
    }
  }
  for (Operation *reshape : llvm::reverse(views))
    if (reshape->use_empty())
      reshape->erase();
  return narrowed;
}

struct MatmulToRuntimeCall
    : trc::impl::MatmulToRuntimeCallBase<MatmulToRuntimeCall> {
  using MatmulToRuntimeCallBase::MatmulToRuntimeCallBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<linalg::BatchMatmulOp> matmuls;
    module.walk([&](linalg::BatchMatmulOp op) {
      if (op.hasPureBufferSemantics())
        matmuls.push_back(op);
    });
    for (auto op : matmuls)
      rewrite(module, op);
  }

  /// The runtime's entry for these element types, or "" when it has none:
  /// f32 and f64 throughout, or 16-bit float operands into an f32 result.
  static std::string runtimeFunction(Type a, Type b, Type c) {
    if (a != b)
      return "";
    if (a == c && (c.isF32() || c.isF64()))
      return c.isF32() ? "trc_rt_matmul_f32" : "trc_rt_matmul_f64";
    if (c.isF32() && (a.isBF16() || a.isF16()))
      return a.isBF16() ? "trc_rt_matmul_bf16" : "trc_rt_matmul_f16";
    return "";
  }

  void rewrite(ModuleOp module, linalg::BatchMatmulOp op) {
    auto a = cast<MemRefType>(op.getDpsInputs()[0].getType());
    auto bt = cast<MemRefType>(op.getDpsInputs()[1].getType());
    auto c = cast<MemRefType>(op.getDpsInits()[0].getType());
    std::string name = runtimeFunction(a.getElementType(), bt.getElementType(),
                                       c.getElementType());
    if (name.empty())
      return;
    auto la = layoutOf(a), lb = layoutOf(bt), lc = layoutOf(c);
    if (!la || !lb || !lc || lc->transposed)
      return;

    Value result = op.getDpsInits()[0];
    // The call overwrites C, so a zero fill right before it is dead; only a
    // result the call writes whole narrows.
    linalg::FillOp fill = zeroFillBefore(op);
    if (narrowResults && name == "trc_rt_matmul_bf16" && fill)
      if (Value narrowed = narrowResult(op, fill, result)) {
        name = "trc_rt_matmul_bf16_bf16";
        result = narrowed;
        c = cast<MemRefType>(narrowed.getType());
        lc = layoutOf(c);
      }
    OpBuilder builder(op);
    Location loc = op.getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return arith::ConstantIntOp::create(builder, loc, builder.getI64Type(), v);
    };
    auto i32 = [&](bool v) -> Value {
      return arith::ConstantIntOp::create(builder, loc, builder.getI32Type(), v);
    };
    auto pointer = [&](Value memref, int64_t offset) -> Value {
      int64_t elemBytes = trc::elementBytes(cast<MemRefType>(memref.getType()).getElementType());
      Value base = memref::ExtractAlignedPointerAsIndexOp::create(builder, loc, memref);
      Value asInt = arith::IndexCastOp::create(builder, loc, builder.getI64Type(), base);
      return offset ? arith::AddIOp::create(builder, loc, asInt, i64(offset * elemBytes))
                          .getResult()
                    : asInt;
    };
    SmallVector<Value> args{i64(c.getDimSize(0)), i64(c.getDimSize(1)),
                            i64(c.getDimSize(2)), i64(a.getDimSize(2))};
    for (auto [value, layout] :
         {std::pair{op.getDpsInputs()[0], *la}, std::pair{op.getDpsInputs()[1], *lb}}) {
      args.append({pointer(value, layout.offset), i64(layout.leading),
                   i64(layout.batchStride), i32(layout.transposed)});
    }
    args.append({pointer(result, lc->offset), i64(lc->leading), i64(lc->batchStride)});

    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
      callee = func::FuncOp::create(top, loc, name,
                                    top.getFunctionType(ValueRange(args).getTypes(), {}));
      callee.setPrivate();
    }
    func::CallOp::create(builder, loc, callee, args);

    if (fill)
      fill.erase();
    op.erase();
  }
};
} // namespace
