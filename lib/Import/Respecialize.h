//===- Respecialize.h - a static export at sizes it was not traced at -*- C++ -*-===//
//
// An export without dynamic axes bakes the traced batch and sequence into its
// shape constants: a Reshape to [8, 128, 8, 32], an Expand of a mask to
// [8, 1, 128, 128], a Slice of a causal-mask buffer to [:128, :128]. To run it
// at other sizes, the importer imports it twice: once at the traced sizes,
// recording every shape-like constant operand with the shape of the data it
// applied to (`TraceRecord`), then at the new sizes, where each such operand
// that still holds its traced value is re-derived from how its data's shape
// changed (the rules below). Several axes that change are re-specialized one
// traced size at a time (`RetraceStep`), so each step changes one symbol.
//
// The rules are positional and a guess where an operand does not say which of
// its entries follow the data (an Expand of a [1, T, T] mask to [8, ...]); the
// caller verifies the result (trc-run runs both programs on duplicated rows).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_RESPECIALIZE_H
#define TRC_LIB_IMPORT_RESPECIALIZE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace trc::import {

/// Which operand a re-derivation is for (each has its own rule).
enum class ShapeOperand {
  ReshapeTarget,
  ExpandTarget,
  SliceStarts,
  SliceEnds,
  TileRepeats,
  FillShape, // ConstantOfShape's shape: a fill of rows (rank >= 2) at the batch
};

/// One step: graph-input dimensions traced at `traced` now have `size`.
struct RetraceStep {
  int64_t traced = 0, size = 0;
};

/// The steps from the traced input shapes to the requested ones: one per
/// distinct (traced, size) pair, in the order the pairs first appear
/// (inputs in order, axes in order); the intermediate input shapes follow
/// from applying the steps in turn. Empty when nothing changes.
std::vector<RetraceStep>
planRetrace(const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> &inputs);

/// A shape-like operand as one import saw it: the values it read (`read`),
/// those it used (`values`: re-derived, or the same) and the shape of the
/// data operand it applied to (input 0 of its node).
struct TracedOperand {
  llvm::SmallVector<int64_t> read;
  llvm::SmallVector<int64_t> values;
  llvm::SmallVector<int64_t> dataShape;
};

/// Every shape-like operand of one import, by (node, input index). The node
/// is the NodeProto's address: both imports read the same parsed model.
using TraceRecord = std::map<std::pair<const void *, int>, TracedOperand>;

/// The re-derived values of `traced` for data now of shape `dataShape`, or
/// nullopt with `why` set when no rule applies. `axes` are a Slice's
/// normalized axes (one per value); `allowZero` is Reshape's attribute;
/// `buffer`: the data is computed from no graph input (a causal-mask buffer
/// a Slice cuts to the traced size follows the symbol).
std::optional<llvm::SmallVector<int64_t>>
rederive(ShapeOperand kind, const TracedOperand &traced, llvm::ArrayRef<int64_t> dataShape,
         RetraceStep step, llvm::ArrayRef<int64_t> axes, bool allowZero, bool buffer,
         std::string &why);

/// An embedding lookup's constant indices (positions, token types: the
/// traced `values`, of shape `traced.dataShape`) for the new sizes: along the
/// outermost axis of the traced size whose slices repeat (token types) or
/// count up by one (positions), that many slices at the new size. Indices
/// without such an axis stay.
void rederiveIndices(const TracedOperand &traced, RetraceStep step,
                     llvm::SmallVector<int64_t> &values, llvm::SmallVector<int64_t> &shape);

/// What the re-specializing import does now: records (the traced import, and
/// every step, for the next) and re-derives (every step after the first).
struct Retrace {
  const TraceRecord *previous = nullptr; // null: the traced import
  TraceRecord current;
  RetraceStep step;
  /// "node 'N' (Reshape) shape [8, 16, 4, 8] -> [4, 16, 4, 8]", per change.
  std::vector<std::string> changes;
};

} // namespace trc::import

#endif // TRC_LIB_IMPORT_RESPECIALIZE_H
