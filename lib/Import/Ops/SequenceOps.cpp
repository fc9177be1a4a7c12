//===- SequenceOps.cpp - ONNX sequences as compile-time lists ---------------===//
//
// SequenceEmpty, SequenceConstruct, SplitToSequence, SequenceAt,
// SequenceInsert, SequenceErase, SequenceLength and ConcatFromSequence on
// sequences the importer holds as lists of tensors (ImportContext's
// Sequence): no trc op stands for a sequence; reading an element is the
// tensor itself, splitting is trc.slice, concatenating trc.concatenate.
//
// Preconditions: every position and split is a compile-time constant (folded
// shape math, an unrolled Loop's iteration number); a dynamic one is an error
// naming the input. Sequences come from these ops or from Loop/If
// (ControlFlowOps.cpp); a graph input or output cannot be a sequence.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"
#include "../TensorData.h"
#include "Common.h"

using namespace mlir;

namespace trc::import {
namespace {

// A constant position input (SequenceAt, SequenceInsert, SequenceErase)
// checked against [-size, size - 1] (or [-size, size] with `mayEqualSize`,
// SequenceInsert's "after the last"), normalized; nullopt after an error.
std::optional<int64_t> constantPosition(ImportContext &ctx, int input, int64_t size,
                                        bool mayEqualSize) {
  auto values = ctx.constantInts(
      input, "position",
      "a sequence position known only at run time is not supported (trc holds "
      "sequences as lists of tensors at import)");
  if (!values) {
    (void)ctx.markUnsupported();
    return std::nullopt;
  }
  if (values->size() != 1) {
    (void)ctx.fail("position must be a scalar, got ", values->size(), " values");
    return std::nullopt;
  }
  int64_t position = (*values)[0];
  int64_t high = mayEqualSize ? size : size - 1;
  if (position < -size || position > high) {
    (void)ctx.fail("position ", position, " is out of range for a sequence of ", size,
                   " tensors");
    return std::nullopt;
  }
  return position < 0 ? position + size : position;
}

// The element type of sequences a node makes with `dtype` (default float).
Type dtypeAttr(ImportContext &ctx) {
  int64_t dtype = ctx.intAttr("dtype", kOnnxFloat);
  Type elem = elementTypeOf(static_cast<int>(dtype), ctx.context());
  if (!elem)
    (void)ctx.unsupported("dtype ", onnxTypeName(static_cast<int>(dtype)), " is not supported");
  return elem;
}

LogicalResult importSequenceEmpty(ImportContext &ctx) {
  Type elem = dtypeAttr(ctx);
  if (!elem)
    return failure();
  return ctx.setSequenceOutput(0, Sequence{{}, elem});
}

LogicalResult importSequenceConstruct(ImportContext &ctx) {
  Sequence sequence;
  for (int i = 0; i < ctx.numInputs(); ++i) {
    Value v = ctx.input(i);
    if (!v)
      return failure();
    Type elem = typeOf(v).getElementType();
    if (sequence.elementType && elem != sequence.elementType)
      return ctx.fail("input #", i, " has element type ", elem, ", input #0 ",
                      sequence.elementType);
    sequence.elementType = elem;
    sequence.tensors.push_back(v);
  }
  if (sequence.tensors.empty())
    return ctx.fail("SequenceConstruct needs at least one input");
  return ctx.setSequenceOutput(0, std::move(sequence));
}

LogicalResult importSplitToSequence(ImportContext &ctx) {
  Value x = ctx.input(0);
  if (!x)
    return failure();
  auto type = typeOf(x);
  if (type.getRank() == 0)
    return ctx.fail("cannot split a scalar");
  auto axis = ctx.axis(ctx.intAttr("axis", 0), type.getRank());
  if (!axis)
    return failure();
  int64_t dim = type.getDimSize(*axis);
  SmallVector<int64_t> sizes;
  bool dropAxis = false;
  if (!ctx.hasInput(1)) {
    // Pieces of size 1, the axis dropped unless keepdims.
    sizes.assign(dim, 1);
    dropAxis = ctx.intAttr("keepdims", 1) == 0;
  } else {
    auto split = ctx.constantInts(
        1, "split",
        "split sizes known only at run time are not supported (trc holds sequences "
        "as lists of tensors at import)");
    if (!split)
      return ctx.markUnsupported();
    if (ctx.inputType(1).getRank() == 0) {
      // One size for every piece; the last takes what is left.
      int64_t chunk = (*split)[0];
      if (chunk <= 0)
        return ctx.fail("split size must be positive, got ", chunk);
      for (int64_t left = dim; left > 0; left -= chunk)
        sizes.push_back(std::min(chunk, left));
    } else {
      sizes = *split;
    }
  }
  SmallVector<Value> pieces = splitAlong(ctx, x, *axis, sizes);
  if (pieces.size() != sizes.size())
    return failure();
  if (dropAxis) {
    SmallVector<int64_t> shape(type.getShape());
    shape.erase(shape.begin() + *axis);
    for (Value &piece : pieces)
      if (!(piece = ctx.reshape(piece, shape)))
        return failure();
  }
  return ctx.setSequenceOutput(0, Sequence{pieces, type.getElementType()});
}

LogicalResult importSequenceAt(ImportContext &ctx) {
  auto sequence = ctx.sequenceInput(0);
  if (!sequence)
    return failure();
  auto position = constantPosition(ctx, 1, sequence->tensors.size(), false);
  if (!position)
    return failure();
  return ctx.setOutput(0, sequence->tensors[*position]);
}

LogicalResult importSequenceInsert(ImportContext &ctx) {
  auto sequence = ctx.sequenceInput(0);
  Value tensor = sequence ? ctx.input(1) : Value();
  if (!tensor)
    return failure();
  Type elem = typeOf(tensor).getElementType();
  if (sequence->elementType && elem != sequence->elementType)
    return ctx.fail("cannot insert a tensor of element type ", elem,
                    " into a sequence of ", sequence->elementType);
  int64_t size = sequence->tensors.size();
  std::optional<int64_t> position = size;
  if (ctx.hasInput(2) && !(position = constantPosition(ctx, 2, size, true)))
    return failure();
  sequence->tensors.insert(sequence->tensors.begin() + *position, tensor);
  sequence->elementType = elem;
  return ctx.setSequenceOutput(0, std::move(*sequence));
}

LogicalResult importSequenceErase(ImportContext &ctx) {
  auto sequence = ctx.sequenceInput(0);
  if (!sequence)
    return failure();
  int64_t size = sequence->tensors.size();
  if (size == 0)
    return ctx.fail("cannot erase from an empty sequence");
  std::optional<int64_t> position = size - 1;
  if (ctx.hasInput(1) && !(position = constantPosition(ctx, 1, size, false)))
    return failure();
  sequence->tensors.erase(sequence->tensors.begin() + *position);
  return ctx.setSequenceOutput(0, std::move(*sequence));
}

LogicalResult importSequenceLength(ImportContext &ctx) {
  auto sequence = ctx.sequenceInput(0);
  if (!sequence)
    return failure();
  return ctx.setOutput(0, ctx.scalar(ctx.builder().getI64Type(),
                                     static_cast<double>(sequence->tensors.size())));
}

LogicalResult importConcatFromSequence(ImportContext &ctx) {
  auto sequence = ctx.sequenceInput(0);
  if (!sequence)
    return failure();
  if (!ctx.attr("axis"))
    return ctx.fail("the attribute axis is required");
  if (sequence->tensors.empty())
    return ctx.fail("cannot concatenate an empty sequence (its shape is unknown)");
  bool newAxis = ctx.intAttr("new_axis", 0) != 0;
  auto type = typeOf(sequence->tensors[0]);
  auto axis = ctx.axis(ctx.intAttr("axis", 0), type.getRank() + (newAxis ? 1 : 0));
  if (!axis)
    return failure();
  SmallVector<Value> pieces(sequence->tensors);
  if (newAxis)
    for (Value &piece : pieces) {
      SmallVector<int64_t> shape(typeOf(piece).getShape());
      shape.insert(shape.begin() + *axis, 1);
      if (!(piece = ctx.reshape(piece, shape)))
        return failure();
    }
  return ctx.setOutput(0, concatAlong(ctx, pieces, *axis));
}

} // namespace

void registerSequenceHandlers(HandlerRegistry &r) {
  r.add("SequenceEmpty", 11, importSequenceEmpty);
  r.add("SequenceConstruct", 11, importSequenceConstruct);
  r.add("SplitToSequence", 11, importSplitToSequence);
  r.add("SequenceAt", 11, importSequenceAt);
  r.add("SequenceInsert", 11, importSequenceInsert);
  r.add("SequenceErase", 11, importSequenceErase);
  r.add("SequenceLength", 11, importSequenceLength);
  r.add("ConcatFromSequence", 11, importConcatFromSequence);
}

} // namespace trc::import
