//===- Sharding.cpp - grids, shardings and their annotations ---------------===//
//
// The plain-struct side of include/trc/Parallel/Sharding.h: the grid
// attribute, #trc.sharding <-> Sharding, per-rank types, and reading and
// writing the `trc.sharding` annotation on op results and arguments.
//
//===----------------------------------------------------------------------===//
#include "trc/Parallel/Sharding.h"

using namespace mlir;

namespace trc::parallel {

int64_t Grid::size(StringRef axis) const {
  for (const auto &[name, n] : axes)
    if (name == axis)
      return n;
  return 1;
}

Grid Grid::read(ModuleOp module) {
  Grid g;
  if (auto dict = module->getAttrOfType<DictionaryAttr>(kGridAttr))
    for (NamedAttribute a : dict)
      if (auto n = dyn_cast<IntegerAttr>(a.getValue()))
        g.axes.push_back({a.getName().str(), n.getInt()});
  return g;
}

void Grid::write(ModuleOp module) const {
  Builder b(module.getContext());
  SmallVector<NamedAttribute> entries;
  for (const auto &[name, n] : axes)
    entries.push_back(b.getNamedAttr(name, b.getI64IntegerAttr(n)));
  module->setAttr(kGridAttr, b.getDictionaryAttr(entries));
}

Sharding Sharding::whole(int64_t rank) {
  Sharding s;
  s.dims.resize(size_t(rank));
  return s;
}

bool Sharding::informative() const {
  return partial() || llvm::any_of(dims, [](const DimSplit &d) { return d.split(); });
}

int64_t Sharding::dimSplitOver(StringRef axis) const {
  for (auto [d, split] : llvm::enumerate(dims))
    if (split.axis == axis)
      return int64_t(d);
  return -1;
}

Sharding Sharding::withoutPartial() const {
  Sharding s = *this;
  s.partialAxis.clear();
  s.partialKind = CollectiveReduction::Sum;
  return s;
}

std::string Sharding::str() const {
  std::string out = "[";
  for (auto [d, split] : llvm::enumerate(dims)) {
    if (d)
      out += ", ";
    if (!split.split())
      out += "-";
    else
      out += (split.blocks != 1
                  ? std::to_string(split.blocks) + (split.mirrored ? "x mirrored " : "x ")
                  : "") +
             split.axis;
  }
  out += "]";
  if (partial())
    out += " partial " + stringifyCollectiveReduction(partialKind).str() + "(" + partialAxis +
           ")";
  return out;
}

ShardingAttr toAttr(MLIRContext *context, const Sharding &s) {
  SmallVector<StringAttr> axes;
  SmallVector<int64_t> blocks;
  SmallVector<bool> mirrored;
  for (const DimSplit &d : s.dims) {
    axes.push_back(StringAttr::get(context, d.axis));
    blocks.push_back(d.blocks);
    mirrored.push_back(d.mirrored);
  }
  return ShardingAttr::get(context, axes, blocks, mirrored,
                           StringAttr::get(context, s.partialAxis),
                           s.partialKind);
}

Sharding fromAttr(ShardingAttr attr) {
  Sharding s;
  for (auto [axis, blocks, mirrored] :
       llvm::zip(attr.getAxes(), attr.getBlocks(), attr.getMirrored()))
    s.dims.push_back({axis.getValue().str(), blocks, mirrored});
  if (attr.getPartialAxis())
    s.partialAxis = attr.getPartialAxis().getValue().str();
  s.partialKind = attr.getPartialKind();
  return s;
}

RankedTensorType localType(RankedTensorType full, const Sharding &s, const Grid &grid) {
  SmallVector<int64_t> shape(full.getShape());
  for (auto [d, split] : llvm::enumerate(s.dims))
    if (split.split())
      shape[d] /= grid.size(split.axis);
  return RankedTensorType::get(shape, full.getElementType());
}

std::optional<Sharding> readSharding(Value v) {
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (!func || arg.getOwner() != &func.getBody().front())
      return std::nullopt;
    if (auto a = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), kShardingAttr))
      return fromAttr(a);
    return std::nullopt;
  }
  auto result = cast<OpResult>(v);
  auto all = result.getOwner()->getAttrOfType<ArrayAttr>(kShardingAttr);
  if (!all || all.size() != result.getOwner()->getNumResults())
    return std::nullopt;
  if (auto a = dyn_cast<ShardingAttr>(all[result.getResultNumber()]))
    return fromAttr(a);
  return std::nullopt;
}

bool hasShardings(func::FuncOp func) {
  for (BlockArgument arg : func.getArguments())
    if (readSharding(arg))
      return true;
  return func
      .walk([](Operation *op) {
        return op->hasAttr(kShardingAttr) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

void writeSharding(Value v, const Sharding &s) {
  MLIRContext *context = v.getContext();
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = cast<func::FuncOp>(arg.getOwner()->getParentOp());
    func.setArgAttr(arg.getArgNumber(), kShardingAttr, toAttr(context, s));
    return;
  }
  auto result = cast<OpResult>(v);
  Operation *op = result.getOwner();
  SmallVector<Attribute> all;
  if (auto old = op->getAttrOfType<ArrayAttr>(kShardingAttr);
      old && old.size() == op->getNumResults())
    all.assign(old.begin(), old.end());
  else
    for (Value r : op->getResults())
      all.push_back(toAttr(context, Sharding::whole(
                                        cast<RankedTensorType>(r.getType()).getRank())));
  all[result.getResultNumber()] = toAttr(context, s);
  op->setAttr(kShardingAttr, ArrayAttr::get(context, all));
}

Value contextSummand(Value returned) {
  auto sum = returned.getDefiningOp<AllReduceOp>();
  if (!sum || sum.getGroup() != CollectiveGroup::Context ||
      sum.getReduction() != CollectiveReduction::Sum)
    return {};
  return sum.getOperand();
}

SmallVector<unsigned> contextSummedGradients(func::FuncOp grad) {
  Operation *ret = grad.getBody().front().getTerminator();
  SmallVector<unsigned> summed;
  for (unsigned r = 1; r < grad.getNumResults(); ++r)
    if (grad.getResultAttr(r, abi::kGradOfAttr) && contextSummand(ret->getOperand(r)))
      summed.push_back(r);
  return summed;
}

} // namespace trc::parallel
