//===- LowerToLinalg.cpp - trc-lower-to-linalg -----------------------------===//
//
// Lowers core trc ops to linalg/tensor/arith/math on tensors (see Passes.td).
// Preconditions: composites decomposed; float or signless integer types.
// Unsigned element types (results, and operands of trc ops) and dropout
// are reported as errors. Ops with zero-element results
// become empty tensors.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Conversion/ScalarOps.h"
#include "trc/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"

namespace trc {
#define GEN_PASS_DEF_LOWERTOLINALG
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

Value emptyLike(OpBuilder &b, Location loc, RankedTensorType t) {
  return b.create<tensor::EmptyOp>(loc, t.getShape(), t.getElementType());
}

Value filled(OpBuilder &b, Location loc, RankedTensorType t, TypedAttr value) {
  Value scalar = b.create<arith::ConstantOp>(loc, value);
  return b.create<linalg::FillOp>(loc, ValueRange{scalar}, ValueRange{emptyLike(b, loc, t)})
      .getResult(0);
}

SmallVector<utils::IteratorType> parallel(int64_t rank) {
  return SmallVector<utils::IteratorType>(rank, utils::IteratorType::parallel);
}

/// A linalg.generic over `resultType`'s index space reading `inputs` through
/// `inputMaps` (the output map is the identity).
Value generic(OpBuilder &b, Location loc, RankedTensorType resultType,
              ValueRange inputs, ArrayRef<AffineMap> inputMaps,
              function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(resultType.getRank()));
  auto op = b.create<linalg::GenericOp>(
      loc, TypeRange{resultType}, inputs, ValueRange{emptyLike(b, loc, resultType)},
      maps, parallel(resultType.getRank()),
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        nb.create<linalg::YieldOp>(nloc, body(nb, nloc, args.drop_back()));
      });
  return op.getResult(0);
}

/// An op whose result has no elements computes nothing: an empty tensor
/// (also keeps e.g. a slice starting at the end of its operand from reaching
/// tensor.extract_slice, which rejects out-of-bounds offsets).
struct LowerEmptyResult : RewritePattern {
  LowerEmptyResult(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 2, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rw) const override {
    if (!isa<TrcDialect>(op->getDialect()) || op->getNumResults() != 1 ||
        isa<GetParameterOp>(op))
      return failure();
    auto t = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!t || !t.hasStaticShape() || t.getNumElements() != 0)
      return failure();
    rw.replaceOp(op, emptyLike(rw, op->getLoc(), t));
    return success();
  }
};

/// Every trc op whose operands and result share a shape: one generic.
struct LowerElementwise : RewritePattern {
  LowerElementwise(MLIRContext *ctx) : RewritePattern(MatchAnyOpTypeTag(), 1, ctx) {}
  LogicalResult matchAndRewrite(Operation *op, PatternRewriter &rw) const override {
    if (!isa<TrcDialect>(op->getDialect()) ||
        !(op->hasTrait<OpTrait::Elementwise>()) || isa<GeluOp>(op) ||
        op->getNumResults() != 1)
      return failure();
    auto resultType = tensorType(op->getResult(0));
    auto identity = rw.getMultiDimIdentityMap(resultType.getRank());
    SmallVector<AffineMap> maps(op->getNumOperands(), identity);
    bool unknown = false;
    Value result = generic(rw, op->getLoc(), resultType, op->getOperands(), maps,
                           [&](OpBuilder &b, Location loc, ValueRange args) {
                             Value v = scalar::emit(b, loc, op, args);
                             unknown = !v;
                             return v ? v : args[0];
                           });
    if (unknown)
      return rw.notifyMatchFailure(op, "no scalar form");
    rw.replaceOp(op, result);
    return success();
  }
};

struct LowerConstant : OpRewritePattern<ConstantOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConstantOp op, PatternRewriter &rw) const override {
    rw.replaceOpWithNewOp<arith::ConstantOp>(op, cast<TypedAttr>(op.getValue()));
    return success();
  }
};

struct LowerIota : OpRewritePattern<IotaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IotaOp op, PatternRewriter &rw) const override {
    Type elem = op.getType().getElementType();
    int64_t dim = op.getDimension();
    rw.replaceOp(op, generic(rw, op.getLoc(), op.getType(), {}, {},
                             [&](OpBuilder &b, Location loc, ValueRange) -> Value {
                               Value i = b.create<linalg::IndexOp>(loc, dim);
                               Value i64 = b.create<arith::IndexCastOp>(
                                   loc, b.getI64Type(), i);
                               return scalar::convert(b, loc, i64, elem);
                             }));
    return success();
  }
};

/// trc.random_uniform: the hash of TrcOps.td on the row-major linear index.
struct LowerRandomUniform : OpRewritePattern<RandomUniformOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(RandomUniformOp op, PatternRewriter &rw) const override {
    RankedTensorType type = op.getType();
    int64_t stream = op.getStream();
    auto scalarKey = AffineMap::get(type.getRank(), 0, {}, rw.getContext());
    rw.replaceOp(op, generic(rw, op.getLoc(), type, op.getKey(), scalarKey,
                             [&](OpBuilder &b, Location loc, ValueRange args) -> Value {
                               auto i64 = [&](uint64_t v) -> Value {
                                 return b.create<arith::ConstantIntOp>(
                                     loc, b.getI64Type(), static_cast<int64_t>(v));
                               };
                               Value linear = i64(0);
                               for (int64_t d = 0; d < type.getRank(); ++d) {
                                 Value i = b.create<arith::IndexCastOp>(
                                     loc, b.getI64Type(), b.create<linalg::IndexOp>(loc, d));
                                 linear = b.create<arith::AddIOp>(
                                     loc, b.create<arith::MulIOp>(
                                              loc, linear, i64(type.getDimSize(d))),
                                     i);
                               }
                               Value x = b.create<arith::XOrIOp>(
                                   loc, args[0],
                                   i64(uint64_t(stream) * 0x9E3779B97F4A7C15ull));
                               x = b.create<arith::AddIOp>(
                                   loc, x,
                                   b.create<arith::MulIOp>(loc, linear,
                                                           i64(0xBF58476D1CE4E5B9ull)));
                               auto mix = [&](unsigned shift, uint64_t multiplier) {
                                 x = b.create<arith::XOrIOp>(
                                     loc, x, b.create<arith::ShRUIOp>(loc, x, i64(shift)));
                                 if (multiplier)
                                   x = b.create<arith::MulIOp>(loc, x, i64(multiplier));
                               };
                               mix(30, 0xBF58476D1CE4E5B9ull);
                               mix(27, 0x94D049BB133111EBull);
                               mix(31, 0);
                               Value top = b.create<arith::ShRUIOp>(loc, x, i64(40));
                               Value f = b.create<arith::UIToFPOp>(loc, b.getF32Type(), top);
                               f = b.create<arith::MulFOp>(
                                   loc, f,
                                   b.create<arith::ConstantOp>(
                                       loc, b.getF32FloatAttr(1.0f / 16777216.0f)));
                               return scalar::convert(b, loc, f, type.getElementType());
                             }));
    return success();
  }
};

/// trc-decompose-composites marks attention's backward recomputation
/// `trc.recomputed`; the linalg op keeps the mark so that CSE does not merge
/// it with the forward's identical op (which would keep the forward's
/// result alive until the backward).
void keepRecomputedMark(Operation *from, Value to) {
  if (from->hasAttr(trc::abi::kRecomputedAttr))
    if (Operation *def = to.getDefiningOp())
      def->setAttr(trc::abi::kRecomputedAttr, UnitAttr::get(from->getContext()));
}

struct LowerBroadcast : OpRewritePattern<BroadcastInDimOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BroadcastInDimOp op, PatternRewriter &rw) const override {
    auto in = tensorType(op.getOperand());
    auto out = op.getType();
    SmallVector<AffineExpr> exprs;
    for (auto [k, d] : llvm::enumerate(op.getBroadcastDimensions()))
      exprs.push_back(in.getDimSize(k) == 1 && out.getDimSize(d) != 1
                          ? rw.getAffineConstantExpr(0)
                          : rw.getAffineDimExpr(d));
    auto map = AffineMap::get(out.getRank(), 0, exprs, rw.getContext());
    Value broadcast = generic(rw, op.getLoc(), out, op.getOperand(), map,
                              [](OpBuilder &, Location, ValueRange a) { return a[0]; });
    keepRecomputedMark(op, broadcast);
    rw.replaceOp(op, broadcast);
    return success();
  }
};

struct LowerReverse : OpRewritePattern<ReverseOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReverseOp op, PatternRewriter &rw) const override {
    auto t = op.getType();
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < t.getRank(); ++i)
      exprs.push_back(llvm::is_contained(op.getDimensions(), i)
                          ? rw.getAffineConstantExpr(t.getDimSize(i) - 1) -
                                rw.getAffineDimExpr(i)
                          : rw.getAffineDimExpr(i));
    auto map = AffineMap::get(t.getRank(), 0, exprs, rw.getContext());
    rw.replaceOp(op, generic(rw, op.getLoc(), t, op.getOperand(), map,
                             [](OpBuilder &, Location, ValueRange a) { return a[0]; }));
    return success();
  }
};

struct LowerTranspose : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rw) const override {
    auto t = rw.create<linalg::TransposeOp>(op.getLoc(), op.getOperand(),
                                            emptyLike(rw, op.getLoc(), op.getType()),
                                            op.getPermutation());
    rw.replaceOp(op, t->getResult(0));
    return success();
  }
};

Value reshapeTo(OpBuilder &b, Location loc, Value v, RankedTensorType to) {
  if (v.getType() == to)
    return v;
  auto shapeType = RankedTensorType::get({to.getRank()}, b.getI64Type());
  Value shape = b.create<arith::ConstantOp>(
      loc, DenseIntElementsAttr::get(shapeType, to.getShape()));
  return b.create<tensor::ReshapeOp>(loc, to, v, shape);
}

struct LowerReshape : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rw) const override {
    rw.replaceOp(op, reshapeTo(rw, op.getLoc(), op.getOperand(), op.getType()));
    return success();
  }
};

SmallVector<OpFoldResult> indexAttrs(OpBuilder &b, ArrayRef<int64_t> values) {
  return llvm::map_to_vector(values,
                             [&](int64_t v) -> OpFoldResult { return b.getIndexAttr(v); });
}

struct LowerSlice : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SliceOp op, PatternRewriter &rw) const override {
    rw.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getType(), op.getOperand(), indexAttrs(rw, op.getStartIndices()),
        indexAttrs(rw, op.getType().getShape()), indexAttrs(rw, op.getStrides()));
    return success();
  }
};

Value insertAt(OpBuilder &b, Location loc, Value source, Value dest,
               ArrayRef<int64_t> offsets) {
  auto t = tensorType(source);
  return b.create<tensor::InsertSliceOp>(loc, source, dest, indexAttrs(b, offsets),
                                         indexAttrs(b, t.getShape()),
                                         indexAttrs(b, SmallVector<int64_t>(t.getRank(), 1)));
}

struct LowerConcatenate : OpRewritePattern<ConcatenateOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ConcatenateOp op, PatternRewriter &rw) const override {
    Value result = emptyLike(rw, op.getLoc(), op.getType());
    SmallVector<int64_t> offsets(op.getType().getRank(), 0);
    for (Value in : op.getInputs()) {
      result = insertAt(rw, op.getLoc(), in, result, offsets);
      offsets[op.getDimension()] += tensorType(in).getDimSize(op.getDimension());
    }
    rw.replaceOp(op, result);
    return success();
  }
};

struct LowerPad : OpRewritePattern<PadOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(PadOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Value value = rw.create<tensor::ExtractOp>(loc, op.getPaddingValue(), ValueRange{});
    Value base = rw.create<linalg::FillOp>(loc, ValueRange{value},
                                           ValueRange{emptyLike(rw, loc, op.getType())})
                     .getResult(0);
    rw.replaceOp(op, insertAt(rw, loc, op.getOperand(), base, op.getEdgePaddingLow()));
    return success();
  }
};

struct LowerGather : OpRewritePattern<GatherOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GatherOp op, PatternRewriter &rw) const override {
    auto in = tensorType(op.getOperand());
    auto idx = tensorType(op.getIndices());
    int64_t axis = op.getAxis(), ni = idx.getRank();
    // indices are read at result dims [axis, axis + rank(indices)).
    SmallVector<AffineExpr> exprs;
    for (int64_t i = 0; i < ni; ++i)
      exprs.push_back(rw.getAffineDimExpr(axis + i));
    auto map = AffineMap::get(op.getType().getRank(), 0, exprs, rw.getContext());
    Value table = op.getOperand();
    rw.replaceOp(op, generic(rw, op.getLoc(), op.getType(), op.getIndices(), map,
                             [&](OpBuilder &b, Location loc, ValueRange a) -> Value {
                               // Negative indices count from the end.
                               Value i = b.create<arith::IndexCastOp>(
                                   loc, b.getIndexType(), a[0]);
                               Value size = b.create<arith::ConstantIndexOp>(
                                   loc, in.getDimSize(axis));
                               Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
                               Value neg = b.create<arith::CmpIOp>(
                                   loc, arith::CmpIPredicate::slt, i, zero);
                               i = b.create<arith::SelectOp>(
                                   loc, neg, b.create<arith::AddIOp>(loc, i, size), i);
                               SmallVector<Value> at;
                               for (int64_t d = 0; d < in.getRank(); ++d)
                                 at.push_back(d == axis ? i
                                              : b.create<linalg::IndexOp>(
                                                    loc, d < axis ? d : d + ni - 1));
                               return b.create<tensor::ExtractOp>(loc, table, at);
                             }));
    return success();
  }
};

/// scatter_add -> an scf.for nest over the updates' index space carrying the
/// result, initially the operand: result[o, wrap(indices[j]), i] +=
/// updates[o, j, i], one element per iteration, in order (repeated indices
/// accumulate). Negative indices count from the end, as in gather. The
/// operand is copied into a new tensor first (a splat one is filled in):
/// bufferization then updates that copy in place, never the operand's buffer
/// (which may be an input).
struct LowerScatterAdd : OpRewritePattern<ScatterAddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ScatterAddOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    auto updates = tensorType(op.getUpdates());
    int64_t axis = op.getAxis(), ni = tensorType(op.getIndices()).getRank();
    int64_t rank = op.getType().getRank(), size = op.getType().getDimSize(axis);
    bool isFloat = isa<FloatType>(op.getType().getElementType());
    Value zero = rw.create<arith::ConstantIndexOp>(loc, 0);
    Value one = rw.create<arith::ConstantIndexOp>(loc, 1);
    // A splat operand (the zeros of a gather's VJP) is a fill, not a copy of
    // a constant as large as the table.
    SplatElementsAttr splat;
    Value init =
        matchPattern(op.getOperand(), m_Constant(&splat))
            ? filled(rw, loc, op.getType(), splat.getSplatValue<TypedAttr>())
            : rw.create<linalg::CopyOp>(loc, op.getOperand(),
                                        emptyLike(rw, loc, op.getType()))
                  .getResult(0);
    SmallVector<Value> lbs(updates.getRank(), zero), steps(updates.getRank(), one), ubs;
    for (int64_t d : updates.getShape())
      ubs.push_back(rw.create<arith::ConstantIndexOp>(loc, d));
    auto nest = scf::buildLoopNest(
        rw, loc, lbs, ubs, steps, ValueRange{init},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange acc) -> scf::ValueVector {
          Value i = b.create<tensor::ExtractOp>(l, op.getIndices(),
                                                ivs.slice(axis, ni));
          i = b.create<arith::IndexCastOp>(l, b.getIndexType(), i);
          Value c0 = b.create<arith::ConstantIndexOp>(l, 0);
          Value n = b.create<arith::ConstantIndexOp>(l, size);
          Value negative = b.create<arith::CmpIOp>(l, arith::CmpIPredicate::slt, i, c0);
          i = b.create<arith::SelectOp>(l, negative, b.create<arith::AddIOp>(l, i, n), i);
          SmallVector<Value> at;
          for (int64_t d = 0; d < rank; ++d)
            at.push_back(d == axis ? i : ivs[d < axis ? d : d + ni - 1]);
          Value update = b.create<tensor::ExtractOp>(l, op.getUpdates(), ivs);
          Value old = b.create<tensor::ExtractOp>(l, acc[0], at);
          Value sum = isFloat ? b.create<arith::AddFOp>(l, old, update).getResult()
                              : b.create<arith::AddIOp>(l, old, update).getResult();
          return {b.create<tensor::InsertOp>(l, sum, acc[0], at)};
        });
    rw.replaceOp(op, nest.results.front());
    return success();
  }
};

struct LowerReduce : OpRewritePattern<ReduceOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    ReduceKind kind = op.getKind();
    Value init = filled(rw, loc, op.getType(),
                        scalar::reductionIdentity(rw, kind, op.getType().getElementType()));
    // linalg.reduce wants its dimensions in increasing order (trc's are a set).
    SmallVector<int64_t> dims(op.getDimensions());
    llvm::sort(dims);
    auto reduce = rw.create<linalg::ReduceOp>(
        loc, ValueRange{op.getOperand()}, ValueRange{init}, dims,
        [&](OpBuilder &b, Location l, ValueRange args) {
          b.create<linalg::YieldOp>(l, scalar::combine(b, l, kind, args[1], args[0]));
        });
    rw.replaceOp(op, reduce.getResult(0));
    return success();
  }
};

/// dot_general -> transpose operands to (batch, free, contract) and
/// (batch, contract, free), reshape to [B, M, K] x [B, K, N], batch_matmul,
/// reshape to the result. Transposes that are identities fold away. f32/f64
/// products become BLAS calls later; other types (f16, integers) loops.
struct LowerDotGeneral : OpRewritePattern<DotGeneralOp> {
  using OpRewritePattern::OpRewritePattern;

  static Value canonical(PatternRewriter &rw, Location loc, Value v,
                         ArrayRef<int64_t> batch, ArrayRef<int64_t> contract,
                         bool contractLast, int64_t &freeSize, int64_t &contractSize,
                         int64_t &batchSize) {
    auto t = tensorType(v);
    SmallVector<int64_t> free;
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (!llvm::is_contained(batch, i) && !llvm::is_contained(contract, i))
        free.push_back(i);
    SmallVector<int64_t> perm(batch);
    if (contractLast) {
      llvm::append_range(perm, free);
      llvm::append_range(perm, contract);
    } else {
      llvm::append_range(perm, contract);
      llvm::append_range(perm, free);
    }
    auto product = [&](ArrayRef<int64_t> dims) {
      int64_t p = 1;
      for (int64_t d : dims)
        p *= t.getDimSize(d);
      return p;
    };
    batchSize = product(batch);
    freeSize = product(free);
    contractSize = product(contract);
    SmallVector<int64_t> permutedShape;
    for (int64_t p : perm)
      permutedShape.push_back(t.getDimSize(p));
    if (!llvm::equal(perm, llvm::seq<int64_t>(0, t.getRank())))
      v = rw.create<TransposeOp>(loc,
                                 RankedTensorType::get(permutedShape, t.getElementType()),
                                 v, perm);
    SmallVector<int64_t> shape = contractLast
                                     ? SmallVector<int64_t>{batchSize, freeSize, contractSize}
                                     : SmallVector<int64_t>{batchSize, contractSize, freeSize};
    return rw.create<ReshapeOp>(loc, RankedTensorType::get(shape, t.getElementType()), v);
  }

  LogicalResult matchAndRewrite(DotGeneralOp op, PatternRewriter &rw) const override {
    Location loc = op.getLoc();
    Type elem = op.getType().getElementType();
    int64_t m, k, n, k2, b, b2;
    Value lhs = canonical(rw, loc, op.getLhs(), op.getLhsBatchingDims(),
                          op.getLhsContractingDims(), true, m, k, b);
    Value rhs = canonical(rw, loc, op.getRhs(), op.getRhsBatchingDims(),
                          op.getRhsContractingDims(), false, n, k2, b2);
    // 16-bit floats accumulate in f32 (as cuBLAS and torch do), rounded once.
    Type accumulator = elem.isBF16() || elem.isF16() ? rw.getF32Type() : elem;
    auto resultType = RankedTensorType::get({b, m, n}, accumulator);
    Value init = filled(rw, loc, resultType,
                        scalar::reductionIdentity(rw, ReduceKind::Sum, accumulator));
    auto mm = rw.create<linalg::BatchMatmulOp>(loc, TypeRange{resultType},
                                               ValueRange{lhs, rhs}, ValueRange{init});
    keepRecomputedMark(op, mm->getResult(0));
    if (accumulator == elem) {
      rw.replaceOpWithNewOp<ReshapeOp>(op, op.getType(), mm->getResult(0));
      return success();
    }
    Value wide = rw.create<ReshapeOp>(
        loc, RankedTensorType::get(op.getType().getShape(), accumulator), mm->getResult(0));
    rw.replaceOpWithNewOp<ConvertOp>(op, op.getType(), wide);
    return success();
  }
};

struct LowerToLinalg : trc::impl::LowerToLinalgBase<LowerToLinalg> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    bool unsupported = false;
    getOperation().walk([&](Operation *op) {
      if (isa<DropoutOp>(op)) {
        op->emitOpError("(random, training mode) is not supported by the CPU "
                        "inference lowering: dropout belongs to the training pipeline");
        unsupported = true;
      } else if (isa<SoftmaxOp, LogSoftmaxOp, LayerNormOp, GeluOp, CrossEntropyOp, AttentionOp,
                     AttentionGradOp>(op)) {
        op->emitOpError("is not lowered by trc-lower-to-linalg (run "
                        "trc-decompose-composites first)");
        unsupported = true;
      }
      auto isUnsigned = [](Type t) {
        auto tensor = dyn_cast<RankedTensorType>(t);
        return tensor && tensor.getElementType().isUnsignedInteger();
      };
      if (llvm::any_of(op->getResultTypes(), isUnsigned) ||
          (isa<TrcDialect>(op->getDialect()) &&
           llvm::any_of(op->getOperandTypes(), isUnsigned))) {
        op->emitOpError("unsigned element types are not supported by the CPU "
                        "backend yet");
        unsupported = true;
      }
    });
    if (unsupported) { // data for the caller beside the diagnostics (CompileReport)
      getOperation()->setAttr(trc::abi::kUnsupportedAttr, UnitAttr::get(ctx));
      return signalPassFailure();
    }

    RewritePatternSet patterns(ctx);
    patterns.add<LowerEmptyResult, LowerElementwise, LowerConstant, LowerIota, LowerRandomUniform,
                 LowerBroadcast, LowerReverse, LowerTranspose, LowerReshape, LowerSlice,
                 LowerConcatenate, LowerPad, LowerGather, LowerScatterAdd, LowerReduce,
                 LowerDotGeneral>(ctx);
    ConversionTarget target(*ctx);
    target.addLegalDialect<linalg::LinalgDialect, tensor::TensorDialect,
                           arith::ArithDialect, math::MathDialect, func::FuncDialect,
                           scf::SCFDialect>();
    target.addIllegalDialect<TrcDialect>();
    // The barrier is bufferized with the linalg ops (trc/Conversion/Bufferization.h).
    target.addLegalOp<GetParameterOp, OptimizationBarrierOp>();
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace
