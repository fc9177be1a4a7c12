//===- OnnxProto.h - the ONNX protobuf headers, in one place ----*- C++ -*-===//
//
// Debian's libonnx is built with ONNX_NAMESPACE=onnx and ONNX_ML=1 (set by
// the trc_onnx CMake target); every importer file includes ONNX through here.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_ONNXPROTO_H
#define TRC_LIB_IMPORT_ONNXPROTO_H

#include "onnx/onnx_pb.h"

#endif
