//===- CausalMask.cpp - proving an attention mask hides later keys ---------===//
//
// hidesLaterChunks (CausalMask.h) by interval evaluation over boxes of
// indices: a box (a range per dim) is followed back through the shape ops
// (broadcast, reshape, transpose, slice) to the leaves, and each value is
// bounded over it by an interval [lo, hi] (an iota by its range, a table
// (a constant, a frozen parameter) by its elements' extremes in the box,
// anything unknown by [-inf, inf]; booleans are 0/1, unknown [0, 1]).
// A query chunk x later key chunk box whose mask interval is the hiding
// value is proven at once (`k > q` over q in [0, c), k in [c, 2c): the
// ranges do not overlap); an inconclusive box is halved until it is proven
// or a single element shows a visible key, where the intervals are exact.
// So a causal mask from positions costs (2C)^2 evaluations at any length,
// and a buffer one pass over its hidden region.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/CausalMask.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/Trc.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>

using namespace mlir;

namespace trc::parallel {
namespace {

/// The elements of `attr` as doubles, or nothing for an element type not
/// read here.
std::optional<std::vector<double>> decode(ElementsAttr attr) {
  auto type = cast<ShapedType>(attr.getType());
  Type element = type.getElementType();
  int64_t n = type.getNumElements();
  std::vector<double> out;
  out.reserve(size_t(n));
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (isa<FloatType>(element)) {
      for (const APFloat &v : dense.getValues<APFloat>())
        out.push_back(v.convertToDouble());
    } else if (auto integer = dyn_cast<IntegerType>(element)) {
      for (const APInt &v : dense.getValues<APInt>())
        out.push_back(integer.isUnsigned() || integer.getWidth() == 1 ? double(v.getZExtValue())
                                                                      : double(v.getSExtValue()));
    } else {
      return std::nullopt;
    }
    return out;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(attr);
  AsmResourceBlob *blob = resource ? resource.getRawHandle().getBlob() : nullptr;
  if (!blob)
    return std::nullopt;
  ArrayRef<char> raw = blob->getData();
  auto read = [&](auto sample) -> bool {
    using T = decltype(sample);
    if (raw.size() != size_t(n) * sizeof(T))
      return false;
    for (int64_t i = 0; i < n; ++i) {
      T v;
      std::memcpy(&v, raw.data() + size_t(i) * sizeof(T), sizeof(T));
      out.push_back(double(v));
    }
    return true;
  };
  bool ok = element.isF32()       ? read(float())
            : element.isF64()     ? read(double())
            : element.isInteger(64) ? read(int64_t())
            : element.isInteger(32) ? read(int32_t())
            : element.isInteger(8)  ? read(int8_t()) // signless i8: signed
            : element.isInteger(1)  ? read(uint8_t())
                                    : false;
  if (!ok)
    return std::nullopt;
  return out;
}

/// A closed range of values; booleans are 0 and 1.
struct Range {
  double lo, hi;
  static Range any() {
    return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  }
  bool is(double v) const { return lo == v && hi == v; }
};

Range hull(Range a, Range b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

/// Indices lo[d]..hi[d] (inclusive) of every dim.
struct Box {
  SmallVector<int64_t> lo, hi;
};

class RangeProbe {
public:
  explicit RangeProbe(func::FuncOp func)
      : func(func), module(func->getParentOfType<ModuleOp>()) {}

  /// The values of `v` over `box` lie in the range returned.
  Range over(Value v, const Box &box) {
    auto type = cast<RankedTensorType>(v.getType());
    Range unknown = type.getElementType().isInteger(1) ? Range{0, 1} : Range::any();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      const std::vector<double> *t = parameterTable(arg);
      return t ? extremes(*t, type.getShape(), box) : unknown;
    }
    Operation *op = v.getDefiningOp();
    if (auto c = dyn_cast<ConstantOp>(op)) {
      const std::vector<double> *t = table(v, c.getValue());
      return t ? extremes(*t, type.getShape(), box) : unknown;
    }
    if (auto iota = dyn_cast<IotaOp>(op)) {
      size_t d = size_t(iota.getDimension());
      return {double(box.lo[d]), double(box.hi[d])};
    }
    if (auto b = dyn_cast<BroadcastInDimOp>(op)) {
      auto from = cast<RankedTensorType>(b.getOperand().getType());
      Box inner;
      for (auto [i, d] : llvm::enumerate(b.getBroadcastDimensions())) {
        bool one = from.getDimSize(int64_t(i)) == 1;
        inner.lo.push_back(one ? 0 : box.lo[size_t(d)]);
        inner.hi.push_back(one ? 0 : box.hi[size_t(d)]);
      }
      return over(b.getOperand(), inner);
    }
    if (auto r = dyn_cast<ReshapeOp>(op)) {
      auto from = cast<RankedTensorType>(r.getOperand().getType());
      std::optional<Box> inner = reshaped(box, type.getShape(), from.getShape());
      return inner ? over(r.getOperand(), *inner) : unknown;
    }
    if (auto t = dyn_cast<TransposeOp>(op)) {
      Box inner{box.lo, box.hi};
      for (auto [i, p] : llvm::enumerate(t.getPermutation())) {
        inner.lo[size_t(p)] = box.lo[i];
        inner.hi[size_t(p)] = box.hi[i];
      }
      return over(t.getOperand(), inner);
    }
    if (auto s = dyn_cast<SliceOp>(op)) {
      Box inner;
      for (size_t d = 0; d < box.lo.size(); ++d) {
        // Every index the slice reads in the box's range (a superset when
        // strided: still a bound).
        inner.lo.push_back(s.getStartIndices()[d] + box.lo[d] * s.getStrides()[d]);
        inner.hi.push_back(s.getStartIndices()[d] + box.hi[d] * s.getStrides()[d]);
      }
      return over(s.getOperand(), inner);
    }
    if (auto c = dyn_cast<ConvertOp>(op)) {
      Range x = over(c.getOperand(), box);
      Type to = type.getElementType();
      if (isa<FloatType>(to))
        return x;
      if (to.isInteger(1))
        return x.is(0) ? Range{0, 0} : (x.lo > 0 || x.hi < 0) ? Range{1, 1} : Range{0, 1};
      return {std::trunc(x.lo), std::trunc(x.hi)};
    }
    if (auto n = dyn_cast<NotOp>(op)) {
      Range x = over(n.getOperand(), box);
      return {1 - x.hi, 1 - x.lo};
    }
    if (auto n = dyn_cast<NegOp>(op)) {
      Range x = over(n.getOperand(), box);
      return {-x.hi, -x.lo};
    }
    // `and` / `or` of predicates settle on one operand that is the
    // absorbing value over the whole box.
    if (isa<AndOp, OrOp>(op)) {
      double absorbing = isa<AndOp>(op) ? 0 : 1;
      Range x = over(op->getOperand(0), box);
      if (x.is(absorbing))
        return x;
      Range y = over(op->getOperand(1), box);
      if (y.is(absorbing))
        return y;
      return x.is(1 - absorbing) && y.is(1 - absorbing) ? x : Range{0, 1};
    }
    if (auto s = dyn_cast<SelectOp>(op)) {
      Range p = over(s.getPred(), box);
      if (p.is(1))
        return over(s.getOnTrue(), box);
      if (p.is(0))
        return over(s.getOnFalse(), box);
      return hull(over(s.getOnTrue(), box), over(s.getOnFalse(), box));
    }
    if (auto c = dyn_cast<CompareOp>(op))
      return compare(c.getDirection(), over(c.getLhs(), box), over(c.getRhs(), box));
    if (isa<AddOp, SubOp, MulOp, MaxOp, MinOp>(op)) {
      Range x = over(op->getOperand(0), box), y = over(op->getOperand(1), box);
      if (isa<AddOp>(op))
        return {x.lo + y.lo, x.hi + y.hi};
      if (isa<SubOp>(op))
        return {x.lo - y.hi, x.hi - y.lo};
      if (isa<MaxOp>(op))
        return {std::max(x.lo, y.lo), std::max(x.hi, y.hi)};
      if (isa<MinOp>(op))
        return {std::min(x.lo, y.lo), std::min(x.hi, y.hi)};
      double p[] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
      if (llvm::any_of(p, [](double v) { return std::isnan(v); }))
        return Range::any();
      return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
    }
    return unknown;
  }

private:
  static Range compare(CompareDirection dir, Range x, Range y) {
    const Range yes{1, 1}, no{0, 0}, either{0, 1};
    switch (dir) {
    case CompareDirection::EQ:
      return x.lo == x.hi && y.lo == y.hi && x.lo == y.lo ? yes
             : x.hi < y.lo || y.hi < x.lo                 ? no
                                                          : either;
    case CompareDirection::NE: {
      Range eq = compare(CompareDirection::EQ, x, y);
      return {1 - eq.hi, 1 - eq.lo};
    }
    case CompareDirection::LT: return x.hi < y.lo ? yes : x.lo >= y.hi ? no : either;
    case CompareDirection::LE: return x.hi <= y.lo ? yes : x.lo > y.hi ? no : either;
    case CompareDirection::GT: return compare(CompareDirection::LT, y, x);
    case CompareDirection::GE: return compare(CompareDirection::LE, y, x);
    }
    return either;
  }

  /// The box of a reshape's operand: exact where the reshape only adds or
  /// drops dims of 1 (the non-unit dims keep their order), or for one
  /// element; otherwise none (unknown).
  static std::optional<Box> reshaped(const Box &box, ArrayRef<int64_t> to,
                                     ArrayRef<int64_t> from) {
    bool single = llvm::all_of(llvm::seq<size_t>(0, box.lo.size()),
                               [&](size_t d) { return box.lo[d] == box.hi[d]; });
    Box inner;
    if (single) {
      for (const SmallVector<int64_t> *corner : {&box.lo, &box.hi}) {
        int64_t flat = 0;
        for (size_t d = 0; d < to.size(); ++d)
          flat = flat * to[d] + (*corner)[d];
        SmallVector<int64_t> &out = corner == &box.lo ? inner.lo : inner.hi;
        out.assign(from.size(), 0);
        for (int64_t d = int64_t(from.size()) - 1; d >= 0; --d) {
          out[size_t(d)] = flat % from[size_t(d)];
          flat /= from[size_t(d)];
        }
      }
      return inner;
    }
    SmallVector<size_t> toDims, fromDims;
    for (size_t d = 0; d < to.size(); ++d)
      if (to[d] != 1)
        toDims.push_back(d);
    for (size_t d = 0; d < from.size(); ++d)
      if (from[d] != 1)
        fromDims.push_back(d);
    if (toDims.size() != fromDims.size())
      return std::nullopt;
    inner.lo.assign(from.size(), 0);
    inner.hi.assign(from.size(), 0);
    for (size_t i = 0; i < toDims.size(); ++i) {
      if (to[toDims[i]] != from[fromDims[i]])
        return std::nullopt;
      inner.lo[fromDims[i]] = box.lo[toDims[i]];
      inner.hi[fromDims[i]] = box.hi[toDims[i]];
    }
    return inner;
  }

  /// The least and greatest of a table's elements in `box`.
  static Range extremes(const std::vector<double> &t, ArrayRef<int64_t> shape, const Box &box) {
    Range r{std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
    SmallVector<int64_t> index(box.lo);
    while (true) {
      int64_t flat = 0;
      for (size_t d = 0; d < shape.size(); ++d)
        flat = flat * shape[d] + index[d];
      r = {std::min(r.lo, t[size_t(flat)]), std::max(r.hi, t[size_t(flat)])};
      size_t d = shape.size();
      while (d > 0 && index[d - 1] == box.hi[d - 1]) {
        index[d - 1] = box.lo[d - 1];
        --d;
      }
      if (d == 0)
        return r;
      ++index[d - 1];
    }
  }

  const std::vector<double> *table(Value key, Attribute value) {
    auto it = tables.find(key);
    if (it == tables.end()) {
      auto elements = dyn_cast_or_null<ElementsAttr>(value);
      it = tables.insert({key, elements ? decode(elements) : std::nullopt}).first;
    }
    return it->second ? &*it->second : nullptr;
  }

  /// A frozen parameter's initial value (a trainable one changes).
  const std::vector<double> *parameterTable(BlockArgument arg) {
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), abi::kParamAttr);
    auto param = name ? module.lookupSymbol<ParameterOp>(name.getValue()) : ParameterOp();
    if (!param || !param.getFrozen() || !param.getInitialValueAttr())
      return nullptr;
    return table(arg, param.getInitialValueAttr());
  }

  func::FuncOp func;
  ModuleOp module;
  DenseMap<Value, std::optional<std::vector<double>>> tables;
};

/// Whether every element of `mask` in `box` is `hiding`: proven for the
/// box at once, or for each half of it in turn.
bool hidesBox(RangeProbe &probe, Value mask, double hiding, Box box) {
  Range r = probe.over(mask, box);
  if (r.is(hiding))
    return true;
  if (r.is(1 - hiding))
    return false; // a visible key
  size_t widest = 0;
  for (size_t d = 1; d < box.lo.size(); ++d)
    if (box.hi[d] - box.lo[d] > box.hi[widest] - box.lo[widest])
      widest = d;
  if (box.lo[widest] == box.hi[widest])
    return false; // one element, not known to hide
  int64_t mid = box.lo[widest] + (box.hi[widest] - box.lo[widest]) / 2;
  Box first = box, second = box;
  first.hi[widest] = mid;
  second.lo[widest] = mid + 1;
  return hidesBox(probe, mask, hiding, first) && hidesBox(probe, mask, hiding, second);
}

/// Whether the mask hides every key chunk after its query chunk for the
/// query chunks in [lo, hi]: the rectangle of query chunks [lo, mid] against
/// key chunks [mid + 1, hi], then each half's own triangle (O(chunks) boxes,
/// not one per pair).
bool hidesTriangle(RangeProbe &probe, Value mask, double hiding, Box box, int64_t chunk,
                   int64_t lo, int64_t hi) {
  if (lo >= hi)
    return true;
  int64_t mid = lo + (hi - lo) / 2;
  size_t queryDim = box.lo.size() - 2, keyDim = box.lo.size() - 1;
  Box rectangle = box;
  rectangle.lo[queryDim] = lo * chunk;
  rectangle.hi[queryDim] = (mid + 1) * chunk - 1;
  rectangle.lo[keyDim] = (mid + 1) * chunk;
  rectangle.hi[keyDim] = (hi + 1) * chunk - 1;
  return hidesBox(probe, mask, hiding, rectangle) &&
         hidesTriangle(probe, mask, hiding, box, chunk, lo, mid) &&
         hidesTriangle(probe, mask, hiding, box, chunk, mid + 1, hi);
}

} // namespace

bool hidesLaterChunks(func::FuncOp func, Value mask, bool fillWhereTrue, int64_t chunk) {
  auto type = cast<RankedTensorType>(mask.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || chunk < 1)
    return false;
  int64_t positions = type.getDimSize(rank - 1);
  if (type.getDimSize(rank - 2) != positions || positions % chunk)
    return false;
  RangeProbe probe(func);
  // Every leading index at once.
  Box box;
  for (int64_t d = 0; d < rank; ++d) {
    box.lo.push_back(0);
    box.hi.push_back(type.getDimSize(d) - 1);
  }
  return hidesTriangle(probe, mask, fillWhereTrue ? 1 : 0, box, chunk, 0,
                       positions / chunk - 1);
}

} // namespace trc::parallel
