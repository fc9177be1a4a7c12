//===- Model.h - the transformer a plan is made for --------------------------===//
//
// A decoder-only transformer described by its shape, for models too large to
// export: parseModelSpec reads "gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V"
// with optional keys
//   ffn=F          the MLP's inner width (default 4H)
//   mlp=gelu|swiglu  two matrices (GPT) or three (gate, up, down: Llama)
//   kv_heads=K     grouped-query attention: K key/value heads (default A;
//                  K divides A)
//   positions=learned|rotary  a position table (s x H parameters) or none
//   tied=true|false  the output layer shares the word embedding or has its own
//   bias=true|false  biases in the projections and layer norms (false: RMSNorm,
//                  no biases)
// "llama:..." is the same with Llama's defaults: mlp=swiglu, positions=rotary,
// tied=false, bias=false (Llama-2-7B: llama:layers=32,hidden=4096,heads=32,
// seq=4096,vocab=32000,ffn=11008 holds 6.74B parameters). The shape keys are
// required once, values are integers >= 1, hidden divisible by heads; errors
// name the key. On error `out` is untouched.
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
  int64_t kvHeads = 0;         // key/value heads (= heads unless grouped-query)
  bool gatedMlp = false;       // SwiGLU: gate, up and down projections
  bool learnedPositions = true;
  bool tiedOutput = true;
  bool biases = true;          // projections' biases, LayerNorm (false: RMSNorm)

  // Key/value width: kvHeads x the head dimension.
  double kvWidth() const { return double(kvHeads) * double(hidden) / double(heads); }
  // Width of the fused query/key/value projection's output.
  double qkvWidth() const { return double(hidden) + 2 * kvWidth(); }
  // Matrices of the MLP that read the hidden state (1, or 2 when gated).
  int mlpInputMatrices() const { return gatedMlp ? 2 : 1; }
  // Weights of one layer's matrix products (what a token multiplies by).
  double layerMatmulWeights() const;
  // Parameter tensors of one layer, QKV counted as one (GPT-2: 12).
  double layerTensors() const { return (3.0 + mlpInputMatrices()) * (biases ? 2 : 1) + (biases ? 4 : 2); }
  // Parameters of one transformer layer (attention, MLP, biases, norms).
  double layerParams() const;
  // Word and position embeddings and an untied output layer.
  double embeddingParams() const;
  // The final norm's parameters.
  double finalNormParams() const { return (biases ? 2.0 : 1.0) * double(hidden); }
  double params() const { return layers * layerParams() + embeddingParams() + finalNormParams(); }
  // The spec that reads back as this model ("gpt:layers=...").
  std::string spec() const;
};

rt::Status parseModelSpec(const std::string &spec, GptModel &out);

} // namespace trc::plan

#endif // TRC_PLAN_MODEL_H
