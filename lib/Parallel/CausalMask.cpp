//===- CausalMask.cpp - proving an attention mask hides later keys ---------===//
//
// hidesLaterChunks (CausalMask.h). Each element is evaluated on demand by
// following its index back through the shape ops (broadcast, reshape,
// transpose, slice) to the leaves, so no T x T tensor is built; tables
// (constants, frozen parameters) are decoded once. Three-valued: an
// element is a number or unknown.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/CausalMask.h"

#include "trc/Abi/AttrNames.h"
#include "trc/Dialect/Trc.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <cmath>
#include <cstring>
#include <optional>

using namespace mlir;

namespace trc::parallel {
namespace {

using Known = std::optional<double>;

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
            : element.isInteger(8) || element.isInteger(1) ? read(uint8_t())
                                                           : false;
  if (!ok)
    return std::nullopt;
  return out;
}

int64_t flatten(ArrayRef<int64_t> index, ArrayRef<int64_t> shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + index[d];
  return flat;
}

class ElementProbe {
public:
  explicit ElementProbe(func::FuncOp func)
      : func(func), module(func->getParentOfType<ModuleOp>()) {}

  /// The element of `v` at `index` (one entry per dim), if known.
  Known at(Value v, ArrayRef<int64_t> index) {
    auto type = cast<RankedTensorType>(v.getType());
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      const std::vector<double> *t = parameterTable(arg);
      return t ? Known((*t)[size_t(flatten(index, type.getShape()))]) : std::nullopt;
    }
    Operation *op = v.getDefiningOp();
    if (auto c = dyn_cast<ConstantOp>(op)) {
      const std::vector<double> *t = table(v, c.getValue());
      return t ? Known((*t)[size_t(flatten(index, type.getShape()))]) : std::nullopt;
    }
    if (auto iota = dyn_cast<IotaOp>(op))
      return double(index[size_t(iota.getDimension())]);
    if (auto b = dyn_cast<BroadcastInDimOp>(op)) {
      auto from = cast<RankedTensorType>(b.getOperand().getType());
      SmallVector<int64_t> inner;
      for (auto [i, d] : llvm::enumerate(b.getBroadcastDimensions()))
        inner.push_back(from.getDimSize(int64_t(i)) == 1 ? 0 : index[size_t(d)]);
      return at(b.getOperand(), inner);
    }
    if (auto r = dyn_cast<ReshapeOp>(op)) {
      auto from = cast<RankedTensorType>(r.getOperand().getType());
      int64_t flat = flatten(index, type.getShape());
      SmallVector<int64_t> inner(size_t(from.getRank()));
      for (int64_t d = from.getRank() - 1; d >= 0; --d) {
        inner[size_t(d)] = flat % from.getDimSize(d);
        flat /= from.getDimSize(d);
      }
      return at(r.getOperand(), inner);
    }
    if (auto t = dyn_cast<TransposeOp>(op)) {
      SmallVector<int64_t> inner(index.size());
      for (auto [i, p] : llvm::enumerate(t.getPermutation()))
        inner[size_t(p)] = index[i];
      return at(t.getOperand(), inner);
    }
    if (auto s = dyn_cast<SliceOp>(op)) {
      SmallVector<int64_t> inner;
      for (size_t d = 0; d < index.size(); ++d)
        inner.push_back(s.getStartIndices()[d] + index[d] * s.getStrides()[d]);
      return at(s.getOperand(), inner);
    }
    if (auto c = dyn_cast<ConvertOp>(op)) {
      Known x = at(c.getOperand(), index);
      Type to = type.getElementType();
      if (!x || isa<FloatType>(to))
        return x;
      return to.isInteger(1) ? double(*x != 0) : std::trunc(*x);
    }
    if (auto n = dyn_cast<NotOp>(op)) {
      Known x = at(n.getOperand(), index);
      return x ? Known(double(*x == 0)) : std::nullopt;
    }
    if (auto n = dyn_cast<NegOp>(op)) {
      Known x = at(n.getOperand(), index);
      return x ? Known(-*x) : std::nullopt;
    }
    // `and` / `or` of predicates settle on one known operand.
    if (isa<AndOp, OrOp>(op)) {
      double absorbing = isa<AndOp>(op) ? 0 : 1;
      Known x = at(op->getOperand(0), index);
      if (x && *x == absorbing)
        return absorbing;
      Known y = at(op->getOperand(1), index);
      if (y && *y == absorbing)
        return absorbing;
      return x && y ? Known(1 - absorbing) : std::nullopt;
    }
    if (auto s = dyn_cast<SelectOp>(op)) {
      Known p = at(s.getPred(), index);
      if (p)
        return at(*p != 0 ? s.getOnTrue() : s.getOnFalse(), index);
      Known x = at(s.getOnTrue(), index), y = at(s.getOnFalse(), index);
      return x && y && *x == *y ? x : std::nullopt;
    }
    if (auto c = dyn_cast<CompareOp>(op)) {
      Known x = at(c.getLhs(), index), y = at(c.getRhs(), index);
      if (!x || !y)
        return std::nullopt;
      switch (c.getDirection()) {
      case CompareDirection::EQ: return double(*x == *y);
      case CompareDirection::NE: return double(*x != *y);
      case CompareDirection::LT: return double(*x < *y);
      case CompareDirection::LE: return double(*x <= *y);
      case CompareDirection::GT: return double(*x > *y);
      case CompareDirection::GE: return double(*x >= *y);
      }
      return std::nullopt;
    }
    if (isa<AddOp, SubOp, MulOp, MaxOp, MinOp>(op)) {
      Known x = at(op->getOperand(0), index), y = at(op->getOperand(1), index);
      if (!x || !y)
        return std::nullopt;
      if (isa<AddOp>(op))
        return *x + *y;
      if (isa<SubOp>(op))
        return *x - *y;
      if (isa<MulOp>(op))
        return *x * *y;
      return isa<MaxOp>(op) ? std::max(*x, *y) : std::min(*x, *y);
    }
    return std::nullopt;
  }

private:
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

} // namespace

bool hidesLaterChunks(func::FuncOp func, Value mask, bool fillWhereTrue, int64_t chunk) {
  auto type = cast<RankedTensorType>(mask.getType());
  int64_t rank = type.getRank();
  if (rank < 2 || chunk < 1)
    return false;
  int64_t positions = type.getDimSize(rank - 1);
  if (type.getDimSize(rank - 2) != positions || positions % chunk)
    return false;
  int64_t leading = type.getNumElements() / (positions * positions);
  ElementProbe probe(func);
  SmallVector<int64_t> index(size_t(rank), 0);
  for (int64_t outer = 0; outer < leading; ++outer) {
    for (int64_t d = rank - 3, rest = outer; d >= 0; --d) {
      index[size_t(d)] = rest % type.getDimSize(d);
      rest /= type.getDimSize(d);
    }
    for (int64_t q = 0; q < positions; ++q)
      for (int64_t k = (q / chunk + 1) * chunk; k < positions; ++k) {
        index[size_t(rank - 2)] = q;
        index[size_t(rank - 1)] = k;
        Known hidden = probe.at(mask, index);
        if (!hidden || (*hidden != 0) != fillWhereTrue)
          return false;
      }
  }
  return true;
}

} // namespace trc::parallel
