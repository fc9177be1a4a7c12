//===- OnnxModelSpec.h - a GPT description derived from an ONNX model -------===//
//
// trc-plan --model MODEL.onnx (builds with the compiler only): imports the
// model, runs trc-parameters-to-arguments and trc-fuse-attention, and reads
// the transformer's shape off the IR (see OnnxModelSpec.cpp). Plain C++
// interface so trc-plan.cpp needs no MLIR header.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_ONNXMODELSPEC_H
#define TRC_DRIVER_ONNXMODELSPEC_H

#include "runtime/support/Status.h"
#include "trc/Plan/Model.h"

#include <string>

namespace trc::plan {

struct OnnxModelDescription {
  GptModel model;
  // Elements of every trc.parameter of the model (frozen ones included).
  double countedParams = 0;
  // The description as a --model gpt:... spec.
  std::string spec;
};

// Derives `out` from the ONNX model at `path`; `dims` is --dim's
// "NAME=N[,NAME=N]" (empty: none). Errors name the file.
rt::Status describeOnnxModel(const std::string &path, const std::string &dims,
                             OnnxModelDescription &out);

} // namespace trc::plan

#endif // TRC_DRIVER_ONNXMODELSPEC_H
