//===- GpuAttentionKernel.cpp - attention without its scores in memory ----===//
//
// emitAttentionForward and emitAttentionBackward (include/trc/Conversion/
// GpuKernels.h). The decomposed attention writes its [batch, Tq, Tk] scores
// and probabilities to memory several times per direction (on an H200 the
// largest kernels of GPT-2's step); these kernels never do. A thread owns
// one row (a query's in the forward and for dq, a key's for dk and dv),
// keeps that row and its accumulators in registers (the head dims are
// unrolled) and reads the other side's rows in turn, so the rows a warp
// reads are the same for all its threads. Scores are combined with an
// online softmax (a running max, the sum rescaled when it grows:
// FlashAttention's); the gradient first recomputes each query's
// log-sum-exp and delta = sum(dp p) = dO . O (FlashAttention-2), then the
// key-side kernel reads them. Arithmetic is f32 whatever the element type
// (loads widened, results narrowed once). A causal mask's hidden keys are
// skipped, not computed and zeroed.
// Preconditions: static shapes, identity layouts, head dims at most
// kMaxAttentionHeadDim, scores' batch dims equal for q, k and v.
//
//===----------------------------------------------------------------------===//
#include "GpuKernelCommon.h"
#include "trc/Abi/AttrNames.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>

using namespace mlir;

namespace trc::gpukernels {
namespace {

// A thread keeps two to four rows of up to 128 values in registers: fewer
// threads per block than the other kernels, so a block's registers fit.
constexpr int64_t kAttentionThreads = 128;

/// The arithmetic of one kernel body, in f32 on flat views of its buffers.
class AttentionEmitter {
public:
  /// `mask`: the mask's flat view (null without one) and `maskShape` its
  /// shape.
  AttentionEmitter(OpBuilder &b, Location loc, const AttentionKernelSpec &spec, Value mask,
                   ArrayRef<int64_t> maskShape)
      : b(b), loc(loc), spec(spec), mask(mask), maskStrides(maskShape.size(), 0) {
    int64_t stride = 1;
    for (int64_t n = int64_t(maskShape.size()) - 1; n >= 0; --n) {
      maskStrides[n] = maskShape[n] == 1 ? 0 : stride;
      stride *= maskShape[n];
    }
  }

  Value index(int64_t v) { return arith::ConstantIndexOp::create(b, loc, v); }
  Value f32(double v) { return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(float(v))); }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value select(Value c, Value x, Value y) { return arith::SelectOp::create(b, loc, c, x, y); }
  Value addi(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
  Value muli(Value x, int64_t c) { return arith::MulIOp::create(b, loc, x, index(c)); }

  Value load(Value flat, Value at) {
    Value v = memref::LoadOp::create(b, loc, flat, ValueRange{at});
    return v.getType().isF32() ? v : arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  }
  void store(Value value, Value flat, Value at) {
    Type element = cast<MemRefType>(flat.getType()).getElementType();
    if (!element.isF32())
      value = arith::TruncFOp::create(b, loc, element, value);
    memref::StoreOp::create(b, loc, value, flat, ValueRange{at});
  }
  /// Row `row` of `flat` viewed as [rows, n]: n scalars.
  SmallVector<Value> loadRow(Value flat, Value row, int64_t n) {
    Value base = muli(row, n);
    SmallVector<Value> values;
    for (int64_t d = 0; d < n; ++d)
      values.push_back(load(flat, addi(base, index(d))));
    return values;
  }
  void storeRow(ValueRange values, Value flat, Value row) {
    Value base = muli(row, int64_t(values.size()));
    for (auto [d, value] : llvm::enumerate(values))
      store(value, flat, addi(base, index(int64_t(d))));
  }
  Value dot(ArrayRef<Value> x, ArrayRef<Value> y) {
    Value sum = mul(x[0], y[0]);
    for (size_t d = 1; d < x.size(); ++d)
      sum = add(sum, mul(x[d], y[d]));
    return sum;
  }
  /// acc[d] * scale + weight * row[d] (scale null: acc[d] + ...).
  SmallVector<Value> axpy(ValueRange acc, Value scale, Value weight, ArrayRef<Value> row) {
    SmallVector<Value> next;
    for (auto [a, r] : llvm::zip(acc, row))
      next.push_back(add(scale ? mul(a, scale) : a, mul(weight, r)));
    return next;
  }

  /// Where the mask's elements for a batch row start (0 without a mask).
  /// Broadcast dims (size 1 where the scores' are not) stride 0.
  Value maskBatchBase(Value batchRow) {
    Value base = index(0);
    if (!mask)
      return base;
    size_t batchDims = spec.batchDims.size();
    if (llvm::none_of(ArrayRef(maskStrides).take_front(batchDims), [](int64_t s) { return s; }))
      return base;
    SmallVector<Value> at = delinearize(b, loc, batchRow, spec.batchDims);
    for (size_t n = 0; n < batchDims; ++n)
      if (maskStrides[n])
        base = addi(base, muli(at[n], maskStrides[n]));
    return base;
  }
  /// Where the mask's elements for (batch row, query) start.
  Value maskRow(Value batchBase, Value query) {
    return mask ? addi(batchBase, muli(query, maskStrides[maskStrides.size() - 2])) : batchBase;
  }
  /// Whether the mask hides `key` for the row starting at `rowBase` (i1).
  Value hidden(Value rowBase, Value key) {
    Value at = addi(rowBase, muli(key, maskStrides.back()));
    Value element = memref::LoadOp::create(b, loc, mask, ValueRange{at});
    if (spec.fillWhereTrue)
      return element;
    Value yes = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 1);
    return arith::XOrIOp::create(b, loc, element, yes);
  }
  /// scale * q . k, replaced by the fill where the mask hides the key; the
  /// second value says whether it does (null without a mask).
  std::pair<Value, Value> score(ArrayRef<Value> qRow, ArrayRef<Value> kRow, Value maskBase,
                                Value key) {
    Value s = dot(qRow, kRow);
    if (spec.scale != 1.0)
      s = mul(s, f32(spec.scale));
    if (!mask)
      return {s, Value()};
    Value hide = hidden(maskBase, key);
    return {select(hide, f32(spec.fill), s), hide};
  }

  /// The max the running values are measured from: the running max, or 0
  /// while every score so far is -inf (so exp gives 0, not exp(-inf + inf)).
  Value reference(Value max) {
    Value none = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, max,
                                       f32(-INFINITY));
    return select(none, f32(0.0), max);
  }
  struct OnlineStep {
    Value max, rescale, weight; // new max, old sums' factor, exp(s - new max)
  };
  OnlineStep online(Value max, Value s) {
    Value next = arith::MaximumFOp::create(b, loc, max, s);
    Value ref = reference(next);
    return {next, exp(sub(max, ref)), exp(sub(s, ref))};
  }

  /// A loop over [lower, upper) carrying `init`; the body (at `b`) gets the
  /// induction variable and the carried values and returns the next ones.
  /// A causal loop (a bound depending on the thread) records its mean trips
  /// over the threads (half the other side's rows) for the cost model.
  ValueRange loop(Value lower, Value upper, ValueRange init,
                  llvm::function_ref<SmallVector<Value>(Value, ValueRange)> body) {
    auto op = scf::ForOp::create(b, loc, lower, upper, index(1), init);
    if (spec.causal)
      op->setAttr(abi::kMeanTripsAttr, b.getI64IntegerAttr((spec.keys + 1) / 2));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(op.getBody());
    SmallVector<Value> next = body(op.getInductionVar(), op.getRegionIterArgs());
    scf::YieldOp::create(b, loc, next);
    return op.getResults();
  }

  /// The loop over the keys of a query (the causal ones only).
  Value keysEnd(Value query) {
    return spec.causal ? addi(query, index(1)) : index(spec.keys);
  }

  OpBuilder &b;
  Location loc;
  const AttentionKernelSpec &spec;

  Value mask; // flat
  SmallVector<int64_t> maskStrides;
};

/// `buffer` (identity layout) as one dimension.
Value flatView(OpBuilder &b, Location loc, Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  if (type.getRank() == 1)
    return buffer;
  ReassociationIndices all(llvm::seq<int64_t>(0, type.getRank()).begin(),
                           llvm::seq<int64_t>(0, type.getRank()).end());
  return memref::CollapseShapeOp::create(b, loc, buffer, ArrayRef<ReassociationIndices>{all});
}

ArrayRef<int64_t> shapeOf(Value mask) {
  return mask ? cast<MemRefType>(mask.getType()).getShape() : ArrayRef<int64_t>();
}

} // namespace

void emitAttentionForward(OpBuilder &b, Location loc, const AttentionKernelSpec &spec, Value q,
                          Value k, Value v, Value mask, Value out, StringRef kernelName) {
  OpBuilder::InsertionGuard guard(b);
  Value qf = flatView(b, loc, q), kf = flatView(b, loc, k), vf = flatView(b, loc, v);
  Value of = flatView(b, loc, out), mf = mask ? flatView(b, loc, mask) : Value();
  LaunchFrame frame = buildLaunch(b, loc, spec.batch * spec.queries, kernelName,
                                  kAttentionThreads);
  AttentionEmitter e(b, loc, spec, mf, shapeOf(mask));
  SmallVector<Value> at = delinearize(b, loc, frame.item, {spec.batch, spec.queries});
  Value batchRow = at[0], query = at[1], row = frame.item;
  SmallVector<Value> qRow = e.loadRow(qf, row, spec.headDim);
  Value maskBase = e.maskRow(e.maskBatchBase(batchRow), query);
  Value firstKey = e.muli(batchRow, spec.keys);

  SmallVector<Value> init{e.f32(-INFINITY), e.f32(0.0)};
  init.append(spec.valueDim, e.f32(0.0));
  ValueRange done = e.loop(e.index(0), e.keysEnd(query), init, [&](Value key, ValueRange acc) {
    Value keyRow = e.addi(firstKey, key);
    auto [s, hide] = e.score(qRow, e.loadRow(kf, keyRow, spec.headDim), maskBase, key);
    AttentionEmitter::OnlineStep o = e.online(acc[0], s);
    SmallVector<Value> next{o.max, e.add(e.mul(acc[1], o.rescale), o.weight)};
    llvm::append_range(next, e.axpy(acc.drop_front(2), o.rescale, o.weight,
                                    e.loadRow(vf, keyRow, spec.valueDim)));
    return next;
  });
  SmallVector<Value> result;
  for (Value acc : done.drop_front(2))
    result.push_back(e.div(acc, done[1]));
  e.storeRow(result, of, row);
}

void emitAttentionBackward(OpBuilder &b, Location loc, const AttentionKernelSpec &spec, Value q,
                           Value k, Value v, Value grad, Value mask, Value dq, Value dk,
                           Value dv, Value stats, StringRef kernelName) {
  OpBuilder::InsertionGuard guard(b);
  Value qf = flatView(b, loc, q), kf = flatView(b, loc, k), vf = flatView(b, loc, v);
  Value gf = flatView(b, loc, grad), sf = flatView(b, loc, stats);
  Value dqf = flatView(b, loc, dq), dkf = flatView(b, loc, dk), dvf = flatView(b, loc, dv);
  Value mf = mask ? flatView(b, loc, mask) : Value();
  int64_t rows = spec.batch * spec.queries; // stats: [log-sum-exp; delta] per query row
  gpu::LaunchOp first;

  // A thread per query row: its statistics, then dq.
  {
    LaunchFrame frame = buildLaunch(b, loc, rows, (kernelName + "_dq").str(), kAttentionThreads);
    first = frame.launch;
    AttentionEmitter e(b, loc, spec, mf, shapeOf(mask));
    SmallVector<Value> at = delinearize(b, loc, frame.item, {spec.batch, spec.queries});
    Value batchRow = at[0], query = at[1], row = frame.item;
    SmallVector<Value> qRow = e.loadRow(qf, row, spec.headDim);
    SmallVector<Value> gRow = e.loadRow(gf, row, spec.valueDim);
    Value maskBase = e.maskRow(e.maskBatchBase(batchRow), query);
    Value firstKey = e.muli(batchRow, spec.keys);
    Value end = e.keysEnd(query);
    // max, sum of exp, sum of exp * dp: all rescaled as the max grows
    ValueRange sums = e.loop(
        e.index(0), end, {e.f32(-INFINITY), e.f32(0.0), e.f32(0.0)},
        [&](Value key, ValueRange acc) -> SmallVector<Value> {
          Value keyRow = e.addi(firstKey, key);
          auto [s, hide] = e.score(qRow, e.loadRow(kf, keyRow, spec.headDim), maskBase, key);
          Value dp = e.dot(gRow, e.loadRow(vf, keyRow, spec.valueDim));
          AttentionEmitter::OnlineStep o = e.online(acc[0], s);
          return {o.max, e.add(e.mul(acc[1], o.rescale), o.weight),
                  e.add(e.mul(acc[2], o.rescale), e.mul(o.weight, dp))};
        });
    Value lse = e.add(e.reference(sums[0]), math::LogOp::create(b, loc, sums[1]));
    Value delta = e.div(sums[2], sums[1]);
    e.store(lse, sf, row);
    e.store(delta, sf, e.addi(row, e.index(rows)));
    SmallVector<Value> zeros(spec.headDim, e.f32(0.0));
    ValueRange dqRow = e.loop(e.index(0), end, zeros, [&](Value key, ValueRange acc) {
      Value keyRow = e.addi(firstKey, key);
      SmallVector<Value> kRow = e.loadRow(kf, keyRow, spec.headDim);
      auto [s, hide] = e.score(qRow, kRow, maskBase, key);
      Value p = e.exp(e.sub(s, lse));
      Value dp = e.dot(gRow, e.loadRow(vf, keyRow, spec.valueDim));
      Value ds = e.mul(p, e.sub(dp, delta));
      if (hide)
        ds = e.select(hide, e.f32(0.0), ds);
      if (spec.scale != 1.0)
        ds = e.mul(ds, e.f32(spec.scale));
      return e.axpy(acc, Value(), ds, kRow);
    });
    e.storeRow(dqRow, dqf, row);
  }

  // A thread per key row: dk and dv over the queries that see it.
  b.setInsertionPointAfter(first);
  LaunchFrame frame = buildLaunch(b, loc, spec.batch * spec.keys, (kernelName + "_dkv").str(),
                                  kAttentionThreads);
  AttentionEmitter e(b, loc, spec, mf, shapeOf(mask));
  SmallVector<Value> at = delinearize(b, loc, frame.item, {spec.batch, spec.keys});
  Value batchRow = at[0], key = at[1];
  SmallVector<Value> kRow = e.loadRow(kf, frame.item, spec.headDim);
  SmallVector<Value> vRow = e.loadRow(vf, frame.item, spec.valueDim);
  Value firstQuery = e.muli(batchRow, spec.queries);
  Value maskBatch = e.maskBatchBase(batchRow);
  SmallVector<Value> zeros(spec.headDim + spec.valueDim, e.f32(0.0));
  ValueRange grads = e.loop(
      spec.causal ? key : e.index(0), e.index(spec.queries), zeros,
      [&](Value query, ValueRange acc) {
        Value row = e.addi(firstQuery, query);
        SmallVector<Value> qRow = e.loadRow(qf, row, spec.headDim);
        SmallVector<Value> gRow = e.loadRow(gf, row, spec.valueDim);
        auto [s, hide] = e.score(qRow, kRow, e.maskRow(maskBatch, query), key);
        Value p = e.exp(e.sub(s, e.load(sf, row)));
        Value ds = e.mul(p, e.sub(e.dot(gRow, vRow), e.load(sf, e.addi(row, e.index(rows)))));
        if (hide)
          ds = e.select(hide, e.f32(0.0), ds);
        if (spec.scale != 1.0)
          ds = e.mul(ds, e.f32(spec.scale));
        SmallVector<Value> next = e.axpy(acc.take_front(spec.headDim), Value(), ds, qRow);
        llvm::append_range(next, e.axpy(acc.drop_front(spec.headDim), Value(), p, gRow));
        return next;
      });
  e.storeRow(grads.take_front(spec.headDim), dkf, frame.item);
  e.storeRow(grads.drop_front(spec.headDim), dvf, frame.item);
}

} // namespace trc::gpukernels
