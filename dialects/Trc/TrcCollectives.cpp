//===- TrcCollectives.cpp - verifiers of the collective ops ---------------===//
//
// Shape rules of dialects/Trc/TrcCollectives.td: reduce_scatter and
// shard_slice split a 1-D operand into `shards` equal chunks, all_gather
// joins `shards` of them; element types never change. collective_permute
// moves a whole value `shift` ranks on a ring.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

using namespace mlir;
using namespace trc;

namespace {
/// `whole` is 1-D and `shards` chunks of the 1-D `chunk`, same element type.
LogicalResult verifyChunks(Operation *op, Type wholeType, Type chunkType, int64_t shards,
                           StringRef wholeName, StringRef chunkName) {
  auto whole = cast<RankedTensorType>(wholeType);
  auto chunk = cast<RankedTensorType>(chunkType);
  if (shards < 1)
    return op->emitOpError("shards must be at least 1, got ") << shards;
  if (whole.getRank() != 1 || chunk.getRank() != 1)
    return op->emitOpError("expects 1-D ") << wholeName << " and " << chunkName;
  if (whole.getElementType() != chunk.getElementType())
    return op->emitOpError("changes the element type from ")
           << whole.getElementType() << " to " << chunk.getElementType();
  if (whole.getDimSize(0) != chunk.getDimSize(0) * shards)
    return op->emitOpError() << wholeName << " has " << whole.getDimSize(0)
                             << " elements, expected " << shards << " x "
                             << chunk.getDimSize(0) << " (" << chunkName << ")";
  return success();
}
} // namespace

LogicalResult ReduceScatterOp::verify() {
  return verifyChunks(*this, getOperand().getType(), getResult().getType(), getShards(),
                      "operand", "result");
}

LogicalResult AllGatherOp::verify() {
  return verifyChunks(*this, getResult().getType(), getOperand().getType(), getShards(),
                      "result", "operand");
}

LogicalResult ShardSliceOp::verify() {
  return verifyChunks(*this, getOperand().getType(), getResult().getType(), getShards(),
                      "operand", "result");
}

LogicalResult CollectivePermuteOp::verify() {
  // I64Attr reads back unsigned: negative values show as huge ones.
  int64_t shards = static_cast<int64_t>(getShards()), shift = static_cast<int64_t>(getShift());
  if (shards < 1)
    return emitOpError("shards must be at least 1, got ") << shards;
  if (shift < 1 || shift >= shards)
    return emitOpError("shift must be in [1, shards), got ") << shift;
  return success();
}

LogicalResult BroadcastFromOp::verify() {
  // I64Attr reads back unsigned; a negative root shows as a huge value.
  if (static_cast<int64_t>(getRoot()) < 0)
    return emitOpError("root must be a rank (>= 0), got ") << static_cast<int64_t>(getRoot());
  return success();
}
