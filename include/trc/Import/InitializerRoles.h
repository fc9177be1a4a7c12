//===- InitializerRoles.h - which initializers of a model train -*- C++ -*-===//
//
// An ONNX model's float initializers are its parameters, its buffers (masks,
// rotary tables, running statistics) and, after an exporter's constant
// folding, values computed from either. Only parameters train. The rule, in
// order of precedence:
//   1. a name matching a --trainable regex trains;
//   2. a name matching a --freeze regex is frozen;
//   3. a name in the model's "trc.frozen" metadata (scripts/export_models.py)
//      is frozen;
//   4. in an export whose initializers carry torch.export's tags, PARAMETER
//      trains and everything else is frozen (a BUFFER, a CONSTANT_TENSOR, or
//      a value the exporter folded) - except that a folded value that looks
//      like a parameter (it feeds a MatMul/Gemm/Gather/Conv weight, or was
//      folded from a named model tensor, and is not a mask or a fill) is an
//      error: training it frozen, or training a folded mask, is silently
//      wrong, so the user re-exports or says which with rule 1 or 2;
//   5. otherwise (an export without tags) every float initializer trains.
// Non-float initializers are constants and never train.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_IMPORT_INITIALIZERROLES_H
#define TRC_IMPORT_INITIALIZERROLES_H

#include <string>
#include <vector>

namespace trc {

/// Why an initializer trains or is frozen (the rule above that decided).
enum class InitializerReason {
  TrainableFlag,     // 1: --trainable
  FreezeFlag,        // 2: --freeze
  FrozenMetadata,    // 3: metadata trc.frozen
  ExportedParameter, // 4: tagged PARAMETER
  ExportedBuffer,    // 4: tagged BUFFER
  ExportedConstant,  // 4: tagged CONSTANT_TENSOR (or another non-parameter kind)
  Folded,            // 4: untagged in a tagged export: the exporter computed it
  Untagged,          // 5: an export without tags
};

/// A short phrase for `reason`, e.g. "tagged PARAMETER by the exporter".
const char *describeInitializerReason(InitializerReason reason);

/// The decision for one float initializer the importer declared.
struct InitializerChoice {
  std::string name;
  bool trains = false;
  InitializerReason reason = InitializerReason::Untagged;
};

} // namespace trc

#endif // TRC_IMPORT_INITIALIZERROLES_H
