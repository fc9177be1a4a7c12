//===- OnnxModelSpec.h - a GPT description derived from an ONNX model -------===//
//
// trc-plan --model MODEL.onnx (builds with the compiler only): imports the
// model, runs trc-parameters-to-arguments and trc-fuse-attention, and reads
// the transformer's shape off the IR (see OnnxModelSpec.cpp), when it has
// one. Plain C++ interface so trc-plan.cpp needs no MLIR header.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_DRIVER_ONNXMODELSPEC_H
#define TRC_DRIVER_ONNXMODELSPEC_H

#include "runtime/support/Status.h"
#include "trc/Plan/Model.h"

#include <optional>
#include <string>

namespace trc::plan {

struct OnnxModelDescription {
  // The transformer's shape, when the IR shows one (attention and a token
  // embedding); else the model is planned from its compiled steps alone
  // (trc/Plan/Search.h's searchCompiled) and `notTransformer` says why.
  std::optional<GptModel> model;
  std::string notTransformer;
  // Elements of every trc.parameter of the model (frozen ones included).
  double countedParams = 0;
  // The description as a --model gpt:... spec (empty without a shape).
  std::string spec;
};

// Derives `out` from the ONNX model at `path`; `dims` is --dim's
// "NAME=N[,NAME=N]" (empty: none). Errors (a model that does not import,
// attention whose shape is dynamic) name the file.
rt::Status describeOnnxModel(const std::string &path, const std::string &dims,
                             OnnxModelDescription &out);

} // namespace trc::plan

#endif // TRC_DRIVER_ONNXMODELSPEC_H
