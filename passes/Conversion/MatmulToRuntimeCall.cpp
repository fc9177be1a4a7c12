//===- MatmulToRuntimeCall.cpp - trc-matmul-to-runtime-call ---------------===//
//
// linalg.batch_matmul on memrefs -> call @trc_rt_matmul_f32/f64, or
// bf16/f16 operands into an f32 result -> @trc_rt_matmul_bf16/f16 (see
// Passes.td and docs/ARTIFACT.md). Pointers are passed as i64 (the same
// register class as a pointer in the C ABIs trc targets). Matmuls whose
// layouts BLAS cannot take (neither innermost nor row stride 1, dynamic
// strides) are left for the loop lowering.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Analysis/ElementBytes.h"

#include "mlir/IR/Builders.h"

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

struct MatmulToRuntimeCall
    : trc::impl::MatmulToRuntimeCallBase<MatmulToRuntimeCall> {
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

    Operation *before = op->getPrevNode();
    OpBuilder builder(op);
    Location loc = op.getLoc();
    auto i64 = [&](int64_t v) -> Value {
      return builder.create<arith::ConstantIntOp>(loc, builder.getI64Type(), v);
    };
    auto i32 = [&](bool v) -> Value {
      return builder.create<arith::ConstantIntOp>(loc, builder.getI32Type(), v);
    };
    auto pointer = [&](Value memref, int64_t offset) -> Value {
      int64_t elemBytes = trc::elementBytes(cast<MemRefType>(memref.getType()).getElementType());
      Value base = builder.create<memref::ExtractAlignedPointerAsIndexOp>(loc, memref);
      Value asInt = builder.create<arith::IndexCastOp>(loc, builder.getI64Type(), base);
      return offset ? builder.create<arith::AddIOp>(loc, asInt, i64(offset * elemBytes))
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
    args.append({pointer(op.getDpsInits()[0], lc->offset), i64(lc->leading),
                 i64(lc->batchStride)});

    auto callee = module.lookupSymbol<func::FuncOp>(name);
    if (!callee) {
      OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
      callee = top.create<func::FuncOp>(
          loc, name, top.getFunctionType(ValueRange(args).getTypes(), {}));
      callee.setPrivate();
    }
    builder.create<func::CallOp>(loc, callee, args);

    // The call overwrites C, so a zero fill right before it is dead.
    if (auto fill = dyn_cast_or_null<linalg::FillOp>(before))
      if (fill.getDpsInits()[0] == op.getDpsInits()[0])
        if (auto zero = fill.getDpsInputs()[0].getDefiningOp<arith::ConstantOp>())
          if (auto f = dyn_cast<FloatAttr>(zero.getValue()); f && f.getValue().isZero())
            fill.erase();
    op.erase();
  }
};
} // namespace
