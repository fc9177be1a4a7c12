//===- ImportRetrace.cpp - ImportContext's part in re-specializing --------===//
//
// The ImportContext members a handler calls where a static export's traced
// sizes live (Respecialize.h): shape operands re-derived (shapeInts),
// embedding indices that follow the sizes (embeddingIndices), and data the
// export fixed at the traced batch cut to fit (retraceFixedData). Each is a
// no-op unless the import re-specializes (GraphState::retrace set); the
// traced import records, the later ones re-derive from its record.
//
//===----------------------------------------------------------------------===//
#include "ImportContext.h"
#include "TensorData.h"

#include <algorithm>
#include <cstring>

using namespace mlir;

namespace trc::import {

/// The previous import's record of input `i` of this node when it read the
/// same values (`read`): an operand holding its traced value, to re-derive.
/// Null for the traced import, or an operand computed from shapes that
/// already changed (right as it is).
static const TracedOperand *tracedRecord(const Retrace &retrace, const onnx::NodeProto &node,
                                         int i, llvm::ArrayRef<int64_t> read) {
  if (!retrace.previous)
    return nullptr;
  auto traced = retrace.previous->find({&node, i});
  return traced != retrace.previous->end() && llvm::ArrayRef<int64_t>(traced->second.read) == read
             ? &traced->second
             : nullptr;
}

std::optional<llvm::SmallVector<int64_t>>
ImportContext::shapeInts(int i, StringRef what, ShapeOperand kind, ArrayRef<int64_t> axes,
                         bool allowZero) {
  auto values = constantInts(i, what);
  Retrace *retrace = state_.outermost().retrace;
  if (!values || !retrace)
    return values;
  TracedOperand now{*values, *values, {}};
  if (Value data = input(0)) {
    auto shape = cast<RankedTensorType>(data.getType()).getShape();
    now.dataShape.assign(shape.begin(), shape.end());
  }
  if (const TracedOperand *traced = tracedRecord(*retrace, node_, i, now.read)) {
    std::string why;
    bool buffer = kind == ShapeOperand::SliceEnds && independentOfInputs(input(0));
    auto derived = rederive(kind, *traced, now.dataShape, retrace->step, axes, allowZero,
                            buffer, why);
    if (!derived) {
      (void)fail(what, " ", shapeString(now.values), " was traced for data of shape ",
                 shapeString(traced->dataShape), " (sizes ", retrace->step.traced, " -> ",
                 retrace->step.size, "); it cannot be re-derived for ",
                 shapeString(now.dataShape), ": ", why);
      return std::nullopt;
    }
    if (*derived != now.values) {
      retrace->changes.push_back("node '" + node_.name() + "' (" + node_.op_type() + ") " +
                                 what.str() + " " + shapeString(now.values) + " -> " +
                                 shapeString(*derived));
      now.values = *derived;
    }
  }
  retrace->current[{&node_, i}] = now;
  return now.values;
}

Value ImportContext::embeddingIndices(int i, Value indices, int64_t rows) {
  Retrace *retrace = state_.outermost().retrace;
  auto values = constantIntsOf(indices);
  if (!retrace || !values)
    return indices;
  auto type = cast<RankedTensorType>(indices.getType());
  TracedOperand now{*values, *values, llvm::to_vector(type.getShape())};
  if (const TracedOperand *traced = tracedRecord(*retrace, node_, i, now.read)) {
    llvm::SmallVector<int64_t> shape;
    rederiveIndices(*traced, retrace->step, now.values, shape);
    if (shape != now.dataShape && !now.values.empty()) {
      int64_t largest = *std::max_element(now.values.begin(), now.values.end());
      if (largest >= rows) {
        (void)fail("the export's constant indices into '", node_.input(0), "' (positions or ",
                   "token types) continue to ", largest, " at the new sizes, but its table "
                   "holds ", rows, " rows: the model takes at most that many");
        return {};
      }
      retrace->changes.push_back("node '" + node_.name() + "' (" + node_.op_type() +
                                 ") indices " + shapeString(now.dataShape) + " -> " +
                                 shapeString(shape));
      now.dataShape = shape;
      indices = reshape(convert(int64s(now.values), type.getElementType()), now.dataShape);
    }
  }
  retrace->current[{&node_, i}] = now;
  return indices;
}

ElementsAttr ImportContext::fixedData(Value v) {
  ElementsAttr value;
  if (matchPattern(v, m_Constant(&value)))
    return value;
  auto get = v.getDefiningOp<GetParameterOp>();
  if (!get)
    return nullptr;
  auto param = SymbolTable::lookupNearestSymbolFrom<ParameterOp>(get, get.getNameAttr());
  return param && param.getFrozen() && param.getInitialValue() ? *param.getInitialValue()
                                                               : nullptr;
}

bool ImportContext::independentOfInputs(Value v) {
  llvm::SmallPtrSet<Operation *, 16> seen;
  llvm::SmallVector<Value> work{v};
  while (!work.empty()) {
    Value next = work.pop_back_val();
    Operation *op = next.getDefiningOp();
    if (!op)
      return false; // a graph input (or a subgraph's argument)
    if (seen.insert(op).second)
      llvm::append_range(work, op->getOperands());
  }
  return true;
}

Value ImportContext::retraceFixedData(Value fixed, llvm::ArrayRef<int64_t> want,
                                      bool broadcast) {
  Retrace *retrace = state_.outermost().retrace;
  if (!retrace || !retrace->previous)
    return fixed;
  auto type = cast<RankedTensorType>(fixed.getType());
  int64_t rank = type.getRank(), offset = static_cast<int64_t>(want.size()) - rank;
  // Candidates: dimensions that no longer fit the other operands.
  llvm::SmallVector<int64_t> hi(type.getShape());
  for (int64_t d = std::max<int64_t>(0, -offset); d < rank; ++d) {
    int64_t other = want[d + offset];
    if (hi[d] != other && hi[d] != 1 && (other != 1 || !broadcast))
      hi[d] = 1;
  }
  if (llvm::ArrayRef<int64_t>(hi) == type.getShape())
    return fixed;
  ElementsAttr value = fixedData(fixed);
  llvm::ArrayRef<char> bytes = value ? elementsBytes(value) : llvm::ArrayRef<char>();
  if (bytes.empty())
    return fixed;
  auto dense = dyn_cast<DenseElementsAttr>(value);
  bool splat = dense && dense.isSplat();
  int64_t width = static_cast<int64_t>(bytes.size()) / std::max<int64_t>(type.getNumElements(), 1);
  if (!splat && (width == 0 || width * type.getNumElements() != static_cast<int64_t>(bytes.size())))
    return fixed; // packed bits (i1): not compared here
  for (int64_t d = 0; d < rank && !splat; ++d) {
    if (hi[d] == type.getDimSize(d))
      continue;
    // Slice k of axis d equals slice 0 for every k: the [outer, n, inner] view.
    int64_t n = type.getDimSize(d), inner = width, outer = 1;
    for (int64_t e = d + 1; e < rank; ++e)
      inner *= type.getDimSize(e);
    for (int64_t e = 0; e < d; ++e)
      outer *= type.getDimSize(e);
    for (int64_t o = 0; o < outer && hi[d] == 1; ++o)
      for (int64_t k = 1; k < n; ++k)
        if (std::memcmp(bytes.data() + (o * n + k) * inner, bytes.data() + o * n * inner,
                        static_cast<size_t>(inner))) {
          hi[d] = n; // differs along d: not a repeat
          break;
        }
  }
  if (llvm::ArrayRef<int64_t>(hi) == type.getShape())
    return fixed;
  Value cut = build<SliceOp>(RankedTensorType::get(hi, type.getElementType()), fixed,
                             llvm::SmallVector<int64_t>(rank, 0), hi,
                             llvm::SmallVector<int64_t>(rank, 1));
  llvm::SmallVector<int64_t> shape(hi);
  for (int64_t d = std::max<int64_t>(0, -offset); d < rank && !broadcast; ++d)
    if (hi[d] != type.getDimSize(d))
      shape[d] = want[d + offset];
  Value out = broadcast ? cut : broadcastTo(cut, shape);
  retrace->changes.push_back("node '" + node_.name() + "' (" + node_.op_type() + ") operand " +
                             shapeString(type.getShape()) + " -> " + shapeString(shape));
  return out;
}

} // namespace trc::import
