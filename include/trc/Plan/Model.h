//===- Model.h - the transformer a plan is made for --------------------------===//
//
// A GPT-style decoder described by its shape, for models too large to
// export: parseModelSpec reads "gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V"
// with an optional ",ffn=F" (default 4H). Every key is required once,
// values are integers >= 1, hidden divisible by heads; errors name the key.
// On error `out` is untouched.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_MODEL_H
#define TRC_PLAN_MODEL_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>

namespace trc::plan {

struct GptModel {
  int64_t layers = 0, hidden = 0, heads = 0, seq = 0, vocab = 0, ffn = 0;
  // Parameters of one transformer layer (attention, MLP, biases, layer norms).
  double layerParams() const;
  // Word and position embeddings (the output layer is tied to the word one).
  double embeddingParams() const;
  double params() const { return layers * layerParams() + embeddingParams() + 2.0 * hidden; }
};

rt::Status parseModelSpec(const std::string &spec, GptModel &out);

} // namespace trc::plan

#endif // TRC_PLAN_MODEL_H
