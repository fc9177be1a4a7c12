//===- TrcDialect.cpp - trc dialect registration --------------------------===//
//
// Registers ops and attributes of the trc dialect and materializes folded
// constants as trc.constant.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/Transforms/InliningUtils.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace trc;

#include "TrcDialect.cpp.inc"
#include "TrcEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "TrcAttrs.cpp.inc"

namespace {
/// trc ops are pure tensor computations: any of them may be inlined (the
/// training step inlines @main_grad).
struct TrcInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
  bool isLegalToInline(Region *, Region *, bool, IRMapping &) const final { return true; }
};
} // namespace

void TrcDialect::initialize() {
  addInterfaces<TrcInlinerInterface>();
  addOperations<
#define GET_OP_LIST
#include "TrcOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "TrcAttrs.cpp.inc"
      >();
}

Operation *TrcDialect::materializeConstant(OpBuilder &builder, Attribute value,
                                           Type type, Location loc) {
  auto elements = dyn_cast<ElementsAttr>(value);
  if (!elements || elements.getType() != type)
    return nullptr;
  return builder.create<ConstantOp>(loc, elements);
}
