//===- AttentionRing.cpp - one attention computed as a ring ----------------===//
//
// See AttentionRing.h. Steps are merged as partial softmaxes: each block's
// (or sub-block's) rows get their own max m', sum l' and output
// accumulator, folded into the running ones by rescaling both to the larger
// max. A partial weighted by 0 (the sub-block a rank's table gives to its
// other half of rows) has m' = the lowest float and l' = 0, which merges as
// an exact no-op, so the choice needs no control flow.
//
//===----------------------------------------------------------------------===//
#include "AttentionRing.h"

#include "trc/Parallel/Reshard.h"

#include <limits>

using namespace mlir;

namespace trc::parallel {

namespace {

/// The rank whose block rank `r` of `n` holds at ring step `j`.
int64_t heldAt(int64_t r, int64_t j, int64_t n) { return ((r - j) % n + n) % n; }

Value throughReshapes(Value v) {
  while (auto r = v.getDefiningOp<ReshapeOp>())
    v = r.getOperand();
  return v;
}

} // namespace

std::optional<Gathered> gatheredOverContext(Value full, int64_t d) {
  int64_t rank = tensorType(full).getRank();
  Value v = full;
  if (auto t = v.getDefiningOp<TransposeOp>())
    v = t.getOperand();
  v = throughReshapes(v);
  // A mirrored split's reorder: a gather of the chunks by a constant table.
  bool mirrored = false;
  if (auto reorder = v.getDefiningOp<GatherOp>()) {
    if (!reorder.getIndices().getDefiningOp<ConstantOp>())
      return std::nullopt;
    mirrored = true;
    v = throughReshapes(reorder.getOperand());
  }
  auto gather = v.getDefiningOp<AllGatherOp>();
  if (!gather || gather.getGroup() != CollectiveGroup::Context)
    return std::nullopt;
  auto flat = gather.getOperand().getDefiningOp<ReshapeOp>();
  auto front = flat ? flat.getOperand().getDefiningOp<TransposeOp>() : TransposeOp();
  if (!front || front.getPermutation() != ArrayRef(dimToFront(d, rank)))
    return std::nullopt;
  Value block = front.getOperand();
  SmallVector<int64_t> shape(tensorType(full).getShape());
  shape[d] /= int64_t(gather.getShards());
  if (tensorType(block).getShape() != ArrayRef(shape))
    return std::nullopt;
  return Gathered{block, gather, mirrored};
}

SmallVector<Operation *> scatterChain(Value full, int64_t d) {
  int64_t rank = tensorType(full).getRank();
  SmallVector<Operation *> chain;
  auto onlyUser = [](Value v) -> Operation * {
    return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
  };
  auto front = dyn_cast_or_null<TransposeOp>(onlyUser(full));
  if (!front || front.getPermutation() != ArrayRef(dimToFront(d, rank)))
    return {};
  chain.push_back(front);
  Operation *op = onlyUser(front.getResult());
  // Reshapes, with a mirrored split's reorder (a gather) among them.
  while (isa_and_nonnull<ReshapeOp, GatherOp>(op)) {
    chain.push_back(op);
    op = onlyUser(op->getResult(0));
  }
  auto scatter = dyn_cast_or_null<ReduceScatterOp>(op);
  if (!scatter || scatter.getGroup() != CollectiveGroup::Context ||
      scatter.getReduction() != CollectiveReduction::Sum)
    return {};
  chain.push_back(scatter);
  op = onlyUser(scatter.getResult());
  while (auto r = dyn_cast_or_null<ReshapeOp>(op)) {
    chain.push_back(r);
    op = onlyUser(r.getResult());
  }
  if (auto back = dyn_cast_or_null<TransposeOp>(op))
    chain.push_back(back);
  SmallVector<int64_t> shape(tensorType(full).getShape());
  shape[d] /= int64_t(scatter.getShards());
  if (tensorType(chain.back()->getResult(0)).getShape() != ArrayRef(shape))
    return {};
  return chain;
}

AttentionRing::AttentionRing(OpBuilder &b, Location loc, Value q, Value k, Value v, Value mask,
                             RingLayout layout, double scale, double fill, bool fillWhereTrue)
    : c{b, loc}, q(q), k(k), v(v), layout(layout), scale(scale), fill(fill),
      fillWhereTrue(fillWhereTrue), rank(c.type(q).getRank()),
      element(c.type(q).getElementType()), f32(b.getF32Type()) {
  if (mask)
    masks = maskBlocks(mask);
  if (layout.skipHidden)
    stepChoices();
}

/// The part of a block one sub-block takes: the queries' half `rows` (all
/// of them when null) against the block's half `keys` (all when null).
AttentionRing::Part AttentionRing::part(std::optional<Half> rows, std::optional<Half> keys,
                                         Value kb, Value vb, Value mask) {
  int64_t d = rank - 2;
  Part p{q, kb, vb, mask};
  if (rows)
    p.q = half(q, d, *rows);
  if (keys) {
    p.k = half(kb, d, *keys);
    p.v = half(vb, d, *keys);
  }
  if (mask) {
    if (rows)
      p.mask = half(p.mask, d, *rows);
    if (keys)
      p.mask = half(p.mask, rank - 1, *keys);
  }
  return p;
}

RingForward AttentionRing::forward() {
  int64_t rows = rank - 2;
  Value kj = k, vj = v, kNext, vNext;
  // Step j's block is sent on before step j computes with it, so that the
  // move overlaps the compute where collectives run beside kernels
  // (trc-collectives-to-runtime-call{overlap}: started here, finished
  // where step j + 1 first reads what arrived).
  auto sendOn = [&](int64_t j) {
    if (j + 1 < layout.shards) {
      kNext = permute(kj);
      vNext = permute(vj);
    }
  };
  auto maskOf = [&](int64_t j) { return masks.empty() ? Value() : masks[j]; };
  auto softmax = [&](const Part &p) { return partial(p.q, p.k, p.v, p.mask); };
  Softmax st;
  if (!layout.skipHidden) {
    sendOn(0);
    st = softmax(part({}, {}, kj, vj, maskOf(0)));
    for (int64_t j = 1; j < layout.shards; ++j) {
      kj = kNext;
      vj = vNext;
      sendOn(j);
      st = merge(st, softmax(part({}, {}, kj, vj, maskOf(j))));
    }
  } else {
    // The rank's own block: its head queries see only its head keys (its
    // tail is a later chunk), its tail queries both.
    Half head{0, {}}, tail{1, {}};
    sendOn(0);
    Softmax heads = softmax(part(head, head, kj, vj, maskOf(0)));
    Softmax tails = softmax(part(tail, {}, kj, vj, maskOf(0)));
    for (int64_t j = 1; j < layout.shards; ++j) {
      kj = kNext;
      vj = vNext;
      sendOn(j);
      Half chosen{0, halves[j]};
      // The queries' tail sees the block's head whole; then head x head or
      // tail x tail, as this rank's table says.
      Softmax a = softmax(part(tail, head, kj, vj, maskOf(j)));
      Softmax bb = softmax(part(chosen, chosen, kj, vj, maskOf(j)));
      Value toHead = headWeights[j];
      Value toTail = c.sub(c.like(toHead, 1.0), toHead);
      heads = merge(heads, weighted(bb, toHead));
      tails = merge(merge(tails, a), weighted(bb, toTail));
    }
    // m and l are [b..., rows]: their rows dim is the operands' too.
    st = {join(heads.m, tails.m, rows), join(heads.l, tails.l, rows),
          join(heads.acc, tails.acc, rows)};
  }
  Value out = c.convert(c.div(st.acc, c.expand(st.l, c.type(st.acc), {rank - 1})), element);
  return {out, c.add(st.m, c.log(st.l))};
}

std::tuple<Value, Value, Value> AttentionRing::backward(const RingForward &fwd, Value g) {
  int64_t rows = rank - 2;
  // sum_k dp p = g . o per query row (softmax's VJP term), in f32.
  Value rowDot = c.reduce(ReduceKind::Sum,
                          c.mul(c.convert(g, f32), c.convert(fwd.result, f32)), {rank - 1});
  // The gradient of one sub-block: the row terms of its queries' half.
  auto grads = [&](std::optional<Half> r, const Part &p) {
    auto ofRows = [&](Value x) { return r ? half(x, rows, *r) : x; };
    return gradBlock(p.q, ofRows(g), ofRows(fwd.lse), ofRows(rowDot), p.k, p.v, p.mask);
  };
  Value kj = k, vj = v, kNext, vNext, dq, dk, dv;
  for (int64_t j = 0; j < layout.shards; ++j) {
    // Sent on before this step computes with it (as in the forward).
    if (j + 1 < layout.shards) {
      kNext = permute(kj);
      vNext = permute(vj);
    }
    Value mask = masks.empty() ? Value() : masks[j];
    Value dqj, dkj, dvj;
    Half head{0, {}}, tail{1, {}};
    if (!layout.skipHidden) {
      std::tie(dqj, dkj, dvj) = grads({}, part({}, {}, kj, vj, mask));
    } else if (j == 0) {
      // The own block as the forward took it: head x head, tail x all.
      auto [dqH, dkA, dvA] = grads(head, part(head, head, kj, vj, mask));
      auto [dqT, dkB, dvB] = grads(tail, part(tail, {}, kj, vj, mask));
      dqj = join(dqH, dqT, rows);
      dkj = join(c.add(dkA, half(dkB, rows, head)), half(dkB, rows, tail), rows);
      dvj = join(c.add(dvA, half(dvB, rows, head)), half(dvB, rows, tail), rows);
    } else {
      Half chosen{0, halves[j]};
      auto [dqA, dkA, dvA] = grads(tail, part(tail, head, kj, vj, mask));
      auto [dqB, dkB, dvB] = grads(chosen, part(chosen, chosen, kj, vj, mask));
      // The chosen sub-block's parts go to the head or the tail rows (of
      // the queries, and of the block for dk, dv).
      auto split = [&](Value fixedPart, Value chosenPart, bool fixedIsTail) {
        Value w = weightLike(headWeights[j], chosenPart);
        Value toHead = c.mul(chosenPart, w);
        Value toTail = c.mul(chosenPart, c.sub(c.like(w, 1.0), w));
        return fixedIsTail ? join(toHead, c.add(fixedPart, toTail), rows)
                           : join(c.add(fixedPart, toHead), toTail, rows);
      };
      dqj = split(dqA, dqB, /*fixedIsTail=*/true);
      dkj = split(dkA, dkB, /*fixedIsTail=*/false);
      dvj = split(dvA, dvB, /*fixedIsTail=*/false);
    }
    dq = dq ? c.add(dq, dqj) : dqj;
    dk = dk ? c.add(dk, dkj) : dkj;
    dv = dv ? c.add(dv, dvj) : dvj;
    // The accumulators travel with their block; after the last step one
    // more move brings each home.
    kj = kNext;
    vj = vNext;
    dk = permute(dk);
    dv = permute(dv);
  }
  return {dq, dk, dv};
}

AttentionRing::Softmax AttentionRing::partial(Value qr, Value kb, Value vb, Value mask) {
  Value s = c.convert(scores(qr, kb, mask), f32);
  // The max starts at the lowest finite value, not -inf, so a row the mask
  // hides in the whole block gives finite terms, never NaN: 0 for a -inf
  // fill, and for a fill of the lowest float terms that vanish (a factor
  // exp(lowest - max)) once a visible key of another block raises the max.
  Value rowMax = c.reduce(ReduceKind::Max, s, {rank - 1});
  Value m = c.max(rowMax, lowest(rowMax));
  Value p = c.exp(c.sub(s, c.expand(m, c.type(s), {rank - 1})));
  Value l = c.reduce(ReduceKind::Sum, p, {rank - 1});
  Value acc = c.convert(c.product(c.convert(p, element), vb, rank - 1, rank - 2), f32);
  return {m, l, acc};
}

AttentionRing::Softmax AttentionRing::merge(const Softmax &a, const Softmax &b) {
  Value m = c.max(a.m, b.m);
  Value fa = c.exp(c.sub(a.m, m)), fb = c.exp(c.sub(b.m, m));
  Value l = c.add(c.mul(a.l, fa), c.mul(b.l, fb));
  Value acc = c.add(c.mul(a.acc, c.expand(fa, c.type(a.acc), {rank - 1})),
                    c.mul(b.acc, c.expand(fb, c.type(b.acc), {rank - 1})));
  return {m, l, acc};
}

AttentionRing::Softmax AttentionRing::weighted(const Softmax &s, Value w) {
  Value wm = weightLike(w, s.m);
  Value m = c.add(c.mul(s.m, wm), c.mul(lowest(s.m), c.sub(c.like(wm, 1.0), wm)));
  return {m, c.mul(s.l, wm), c.mul(s.acc, weightLike(w, s.acc))};
}

std::tuple<Value, Value, Value> AttentionRing::gradBlock(Value qr, Value g, Value lse,
                                                         Value rowDot, Value kb, Value vb,
                                                         Value mask) {
  Value s = c.convert(scores(qr, kb, mask), f32);
  Value p = c.exp(c.sub(s, c.expand(lse, c.type(s), {rank - 1})));
  Value dvb = c.product(c.convert(p, element), g, rank - 2, rank - 2);
  Value dp = c.convert(c.product(g, vb, rank - 1, rank - 1), f32);
  Value ds =
      c.convert(c.mul(p, c.sub(dp, c.expand(rowDot, c.type(dp), {rank - 1}))), element);
  if (mask) {
    Value hidden = stretch(mask, c.type(ds));
    Value zero = c.like(ds, 0.0);
    ds = fillWhereTrue ? c.b.create<SelectOp>(c.loc, hidden, zero, ds).getResult()
                       : c.b.create<SelectOp>(c.loc, hidden, ds, zero).getResult();
  }
  if (scale != 1.0)
    ds = c.mul(ds, c.like(ds, scale));
  Value dqb = c.product(ds, kb, rank - 1, rank - 2);
  Value dkb = c.product(ds, qr, rank - 2, rank - 2);
  return {dqb, dkb, dvb};
}

/// scale * q k^T with the mask applied, the operands' type.
Value AttentionRing::scores(Value qr, Value kb, Value mask) {
  Value s = c.product(qr, kb, rank - 1, rank - 1);
  if (scale != 1.0)
    s = c.mul(s, c.like(s, scale));
  if (!mask)
    return s;
  Value hidden = stretch(mask, c.type(s));
  Value filled = c.like(s, fill);
  return fillWhereTrue ? c.b.create<SelectOp>(c.loc, hidden, filled, s).getResult()
                       : c.b.create<SelectOp>(c.loc, hidden, s, filled).getResult();
}

/// A mask broadcast to the scores' shape (it may be 1 in dims it is the
/// same along).
Value AttentionRing::stretch(Value mask, RankedTensorType scores) {
  if (c.type(mask).getShape() == scores.getShape())
    return mask;
  return c.b.create<BroadcastInDimOp>(c.loc, c.type(mask).clone(scores.getShape()), mask,
                                      llvm::to_vector(llvm::seq<int64_t>(0, rank)));
}

Value AttentionRing::permute(Value x) {
  return c.b.create<CollectivePermuteOp>(c.loc, x.getType(), x, 1, CollectiveGroup::Context,
                                         layout.shards);
}

Value AttentionRing::lowest(Value like) {
  return c.splat(c.type(like), double(std::numeric_limits<float>::lowest()));
}

/// Half `h` of dim `d` (a dim of 1, broadcast, is its own half).
Value AttentionRing::half(Value x, int64_t d, Half h) {
  RankedTensorType type = c.type(x);
  int64_t size = type.getDimSize(d);
  if (size == 1)
    return x;
  SmallVector<int64_t> shape(type.getShape());
  shape[d] = size / 2;
  if (!h.picked) {
    SmallVector<int64_t> start(type.getRank(), 0), limit(type.getShape()),
        strides(type.getRank(), 1);
    start[d] = h.fixed * size / 2;
    limit[d] = start[d] + size / 2;
    return c.b.create<SliceOp>(c.loc, type.clone(shape), x, start, limit, strides);
  }
  SmallVector<int64_t> halves(type.getShape().take_front(d));
  halves.append({2, size / 2});
  halves.append(type.getShape().begin() + d + 1, type.getShape().end());
  Value split = c.b.create<ReshapeOp>(c.loc, type.clone(halves), x);
  SmallVector<int64_t> one(halves);
  one[d] = 1;
  Value picked = c.b.create<GatherOp>(c.loc, type.clone(one), split, h.picked, d);
  return c.b.create<ReshapeOp>(c.loc, type.clone(shape), picked);
}

Value AttentionRing::join(Value head, Value tail, int64_t d) {
  SmallVector<int64_t> shape(c.type(head).getShape());
  shape[d] *= 2;
  return c.b.create<ConcatenateOp>(c.loc, c.type(head).clone(shape), ValueRange{head, tail},
                                   d);
}

/// The scalar `w` broadcast to `like`'s shape and element type.
Value AttentionRing::weightLike(Value w, Value like) {
  Value typed = c.convert(w, c.type(like).getElementType());
  return c.b.create<BroadcastInDimOp>(c.loc, c.type(like).clone(c.type(typed).getElementType()),
                                      typed, ArrayRef<int64_t>{});
}

/// Per step j >= 1 on rank r, holding rank s = (r - j) mod C's block: the
/// second sub-block is head x head when s < r (the block's chunks come
/// before this rank's: its head is visible to both query chunks, its tail
/// to neither) and tail x tail when s > r.
void AttentionRing::stepChoices() {
  int64_t n = layout.shards;
  SmallVector<int64_t> table;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t j = 0; j < n; ++j)
      table.push_back(heldAt(r, j, n) < r ? 0 : 1);
  Value mine = rankRowOf(c.b, c.loc, table, n, CollectiveGroup::Context, n);
  auto i64 = c.b.getI64Type();
  halves.assign(size_t(n), Value());
  headWeights.assign(size_t(n), Value());
  for (int64_t j = 1; j < n; ++j) {
    Value one = c.b.create<SliceOp>(c.loc, RankedTensorType::get({1}, i64), mine,
                                    ArrayRef<int64_t>{j}, ArrayRef<int64_t>{j + 1},
                                    ArrayRef<int64_t>{1});
    halves[size_t(j)] = one;
    Value scalar = c.b.create<ReshapeOp>(c.loc, RankedTensorType::get({}, i64), one);
    Value tail = c.convert(scalar, f32);
    headWeights[size_t(j)] = c.sub(c.like(tail, 1.0), tail);
  }
}

/// The mask's columns of the block each step holds: step j's are rank
/// (r - j) mod C's keys. A mask the same for every key (last dim 1) serves
/// every step as it is; one the same for every query (a padding mask, its
/// rows dim 1) gathered over the group travels with the keys instead of
/// being gathered; otherwise its key dim is whole, in order, and each
/// step's columns (one chunk, or the head-tail pair s, 2C-1-s) are picked
/// by a table of chunk indices sliced by rank.
SmallVector<Value> AttentionRing::maskBlocks(Value mask) {
  int64_t shards = layout.shards;
  auto type = c.type(mask);
  int64_t keys = type.getShape().back();
  if (keys == 1)
    return SmallVector<Value>(shards, mask);
  if (type.getShape()[rank - 2] == 1)
    if (std::optional<Gathered> g = gatheredOverContext(mask, rank - 1)) {
      SmallVector<Value> out{g->block};
      for (int64_t j = 1; j < shards; ++j)
        out.push_back(permute(out.back()));
      return out;
    }
  int64_t perBlock = layout.mirrored ? 2 : 1;
  int64_t chunks = shards * perBlock, chunkKeys = keys / chunks;
  SmallVector<int64_t> split(type.getShape().drop_back());
  split.append({chunks, chunkKeys});
  Value byChunk = c.b.create<ReshapeOp>(c.loc, type.clone(split), mask);
  // Row r of the table: the chunks rank r holds at each step, in order.
  SmallVector<int64_t> table;
  for (int64_t r = 0; r < shards; ++r)
    for (int64_t j = 0; j < shards; ++j) {
      int64_t s = heldAt(r, j, shards);
      table.push_back(s);
      if (layout.mirrored)
        table.push_back(chunks - 1 - s);
    }
  Value mine = rankRowOf(c.b, c.loc, table, chunks, CollectiveGroup::Context, shards);
  int64_t axis = int64_t(split.size()) - 2;
  Value ordered = c.b.create<GatherOp>(c.loc, type.clone(split), byChunk, mine, axis);
  SmallVector<Value> out;
  SmallVector<int64_t> start(split.size(), 0), limit(split), strides(split.size(), 1);
  SmallVector<int64_t> sliced(split);
  sliced[axis] = perBlock;
  SmallVector<int64_t> blockShape(type.getShape().drop_back());
  blockShape.push_back(perBlock * chunkKeys);
  for (int64_t j = 0; j < shards; ++j) {
    start[axis] = j * perBlock;
    limit[axis] = (j + 1) * perBlock;
    Value one = c.b.create<SliceOp>(c.loc, type.clone(sliced), ordered, start, limit, strides);
    out.push_back(c.b.create<ReshapeOp>(c.loc, type.clone(blockShape), one));
  }
  return out;
}

} // namespace trc::parallel
