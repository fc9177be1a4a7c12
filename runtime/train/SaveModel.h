//===- SaveModel.h - the trained model as PyTorch and HF load it -*- C++ -*-===//
//
// `trc-run ... --save-model DIR`: after training, DIR holds the trained
// parameters alone (no optimizer state), under the model's own names:
//   * model.safetensors: every parameter the run trained (and running
//     statistics it updated), named as in the model's state dict: the
//     export wrapper's prefix (ONNX metadata `trc.state_dict_prefix`, which
//     scripts/export_torch.py writes) removed; a tied weight is one
//     initializer, so it is written once. Safetensors metadata
//     {"format": "pt"}, as transformers writes it.
//   * config.json: a Hugging Face model's config (metadata `trc.hf_config`),
//     so that `from_pretrained(DIR)` loads it (tied heads are re-tied).
//   * trc-model.json: what this is: the source model, the step, the prefix
//     removed and the tensors' names, dtypes and shapes.
// DIR is written beside itself and renamed into place (a crash leaves the
// old DIR or none); an existing DIR is replaced only if trc-model.json says
// --save-model wrote it, else refused before training (checkSaveModelTarget)
// and nothing is overwritten. Messages name DIR.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_SAVEMODEL_H
#define TRC_RUNTIME_TRAIN_SAVEMODEL_H

#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace trc::rt {

inline constexpr const char kSavedModelTensors[] = "model.safetensors";
inline constexpr const char kSavedModelConfig[] = "config.json";
inline constexpr const char kSavedModelRecord[] = "trc-model.json";

struct SavedModel {
  std::string dir;                             // --save-model
  std::string source;                          // the model trained
  int64_t step = 0;                            // steps trained
  std::vector<NamedTensor> tensors;            // trained parameters, the model's names
  std::map<std::string, std::string> metadata; // the model's ONNX metadata
};

/// Before training: DIR is absent, or a folder --save-model wrote.
Status checkSaveModelTarget(const std::string &dir);

/// Writes DIR (see above).
Status saveModel(const SavedModel &model);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_SAVEMODEL_H
