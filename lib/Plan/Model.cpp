//===- Model.cpp - GPT shape descriptions ------------------------------------===//
//
// Parameter counts follow Megatron-LM for GPT: per layer QKV and output
// projections (4h^2 + 4h), the MLP (2hF + F + h) and two layer norms (4h);
// embeddings V h + s h (the output layer shares the word embedding). With
// grouped-query attention K and V are kvWidth wide; a gated MLP has a third
// h x F matrix (and bias); without biases the norms are RMSNorm (h each); an
// untied output layer adds V h; rotary positions add nothing.
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Model.h"

#include "runtime/support/Parse.h"

#include <map>

namespace trc::plan {

double GptModel::layerMatmulWeights() const {
  const double h = double(hidden), f = double(ffn);
  return h * qkvWidth() + h * h + (mlpInputMatrices() + 1) * h * f;
}

double GptModel::layerParams() const {
  const double h = double(hidden), f = double(ffn);
  double biasParams = biases ? qkvWidth() + h + mlpInputMatrices() * f + h : 0;
  double norms = 2 * (biases ? 2 * h : h);
  return layerMatmulWeights() + biasParams + norms;
}

double GptModel::embeddingParams() const {
  double table = double(vocab) * double(hidden);
  return table + (learnedPositions ? double(seq) * double(hidden) : 0) + (tiedOutput ? 0 : table);
}

std::string GptModel::spec() const {
  std::string s = "gpt:layers=" + std::to_string(layers) + ",hidden=" + std::to_string(hidden) +
                  ",heads=" + std::to_string(heads) + ",seq=" + std::to_string(seq) +
                  ",vocab=" + std::to_string(vocab) + ",ffn=" + std::to_string(ffn);
  if (kvHeads != heads)
    s += ",kv_heads=" + std::to_string(kvHeads);
  if (gatedMlp)
    s += ",mlp=swiglu";
  if (!learnedPositions)
    s += ",positions=rotary";
  if (!tiedOutput)
    s += ",tied=false";
  if (!biases)
    s += ",bias=false";
  return s;
}

rt::Status parseModelSpec(const std::string &spec, GptModel &out) {
  auto err = [&](const std::string &m) { return rt::Status::error("--model '" + spec + "': " + m); };
  const bool llama = spec.rfind("llama:", 0) == 0;
  if (spec.rfind("gpt:", 0) != 0 && !llama)
    return err("expected gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F,...], "
               "llama:... or MODEL.onnx");
  GptModel m;
  if (llama) {
    m.gatedMlp = true;
    m.learnedPositions = m.tiedOutput = m.biases = false;
  }
  std::map<std::string, int64_t *> numbers = {
      {"layers", &m.layers}, {"hidden", &m.hidden}, {"heads", &m.heads},  {"seq", &m.seq},
      {"vocab", &m.vocab},   {"ffn", &m.ffn},       {"kv_heads", &m.kvHeads}};
  // Choice keys: the value that sets the flag, the one that clears it.
  struct Choice {
    bool *flag;
    const char *yes, *no;
  };
  std::map<std::string, Choice> choices = {{"mlp", {&m.gatedMlp, "swiglu", "gelu"}},
                                           {"positions", {&m.learnedPositions, "learned", "rotary"}},
                                           {"tied", {&m.tiedOutput, "true", "false"}},
                                           {"bias", {&m.biases, "true", "false"}}};
  const char *known = "layers, hidden, heads, seq, vocab, ffn, kv_heads, mlp, positions, tied, bias";
  std::map<std::string, bool> seen;
  for (std::string_view item : rt::splitText(std::string_view(spec).substr(llama ? 6 : 4), ',')) {
    size_t eq = item.find('=');
    std::string key(item.substr(0, eq));
    std::string value(eq == std::string_view::npos ? "" : item.substr(eq + 1));
    if (!numbers.count(key) && !choices.count(key))
      return err("unknown key '" + key + "' (known: " + known + ")");
    if (seen[key])
      return err("key '" + key + "' given twice");
    seen[key] = true;
    if (auto c = choices.find(key); c != choices.end()) {
      if (value != c->second.yes && value != c->second.no)
        return err("key '" + key + "': expected " + c->second.yes + " or " + c->second.no +
                   ", got '" + value + "'");
      *c->second.flag = value == c->second.yes;
      continue;
    }
    std::optional<int64_t> v = rt::parseInt64(value, 1, int64_t(1) << 32);
    if (!v)
      return err("key '" + key + "': expected an integer >= 1, got '" + value + "'");
    *numbers[key] = *v;
  }
  for (const char *k : {"layers", "hidden", "heads", "seq", "vocab"})
    if (*numbers[k] == 0)
      return err(std::string("missing key '") + k + "'");
  if (m.hidden % m.heads != 0)
    return err("key 'heads': " + std::to_string(m.heads) + " does not divide hidden " +
               std::to_string(m.hidden));
  if (m.kvHeads == 0)
    m.kvHeads = m.heads;
  if (m.heads % m.kvHeads != 0)
    return err("key 'kv_heads': " + std::to_string(m.kvHeads) + " does not divide heads " +
               std::to_string(m.heads));
  if (m.ffn == 0)
    m.ffn = 4 * m.hidden;
  out = m;
  return rt::Status::success();
}

} // namespace trc::plan
