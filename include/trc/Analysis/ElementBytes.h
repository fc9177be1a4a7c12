//===- ElementBytes.h - bytes of MLIR elements and tensors ------*- C++ -*-===//
//
// trc's storage rule (trc/Abi/ElementBytes.h: whole bytes per element, i1
// and i4 one byte, complex<fN> 2*N/8) applied to MLIR types, for the
// compiler: the memory plan, the fusion and recomputation cost models, the
// importer's tensor data and the lowering. Header only, so every compiler
// library can use it without a new link dependency.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ANALYSIS_ELEMENTBYTES_H
#define TRC_ANALYSIS_ELEMENTBYTES_H

#include "trc/Abi/ElementBytes.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"
#include "mlir/IR/BuiltinTypes.h"

namespace trc {

/// Bytes one element of type `element` takes: an integer or float by its
/// bit width, complex<T> two T's, index 8 (the 64-bit index of the LLVM
/// lowering); 0 for types that are not stored elements.
inline int64_t elementBytes(mlir::Type element) {
  if (auto complex = mlir::dyn_cast<mlir::ComplexType>(element)) {
    mlir::Type part = complex.getElementType();
    return part.isIntOrFloat()
               ? abi::storageBytesPerElement(part.getIntOrFloatBitWidth(), /*isComplex=*/true)
               : 0;
  }
  if (element.isIndex())
    return abi::storageBytesPerElement(mlir::IndexType::kInternalStorageBitWidth);
  if (element.isIntOrFloat())
    return abi::storageBytesPerElement(element.getIntOrFloatBitWidth());
  return 0;
}

/// Bytes of a statically shaped tensor or memref: its elements times
/// elementBytes of its element type.
inline int64_t storageBytes(mlir::ShapedType type) {
  return type.getNumElements() * elementBytes(type.getElementType());
}

} // namespace trc

#endif // TRC_ANALYSIS_ELEMENTBYTES_H
