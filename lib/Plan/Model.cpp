//===- Model.cpp - GPT shape descriptions ------------------------------------===//
//
// Parameter counts follow Megatron-LM: per layer QKV and output projections
// (4h^2 + 4h), the MLP (2hF + F + h) and two layer norms (4h); embeddings
// V h + s h (the output layer shares the word embedding).
//
//===----------------------------------------------------------------------===//
#include "trc/Plan/Model.h"

#include "runtime/support/Parse.h"

#include <map>

namespace trc::plan {

double GptModel::layerParams() const {
  double h = double(hidden), f = double(ffn);
  return 4 * h * h + 4 * h + 2 * h * f + f + h + 4 * h;
}

double GptModel::embeddingParams() const { return double(vocab + seq) * double(hidden); }

rt::Status parseModelSpec(const std::string &spec, GptModel &out) {
  auto err = [&](const std::string &m) { return rt::Status::error("--model '" + spec + "': " + m); };
  if (spec.rfind("gpt:", 0) != 0)
    return err("expected gpt:layers=L,hidden=H,heads=A,seq=S,vocab=V[,ffn=F] or MODEL.onnx");
  GptModel m;
  std::map<std::string, int64_t *> keys = {{"layers", &m.layers}, {"hidden", &m.hidden},
                                           {"heads", &m.heads},   {"seq", &m.seq},
                                           {"vocab", &m.vocab},   {"ffn", &m.ffn}};
  for (std::string_view item : rt::splitText(std::string_view(spec).substr(4), ',')) {
    size_t eq = item.find('=');
    std::string key(item.substr(0, eq));
    auto it = keys.find(key);
    if (it == keys.end())
      return err("unknown key '" + key + "' (known: layers, hidden, heads, seq, vocab, ffn)");
    if (*it->second != 0)
      return err("key '" + key + "' given twice");
    std::optional<int64_t> v;
    if (eq != std::string_view::npos)
      v = rt::parseInt64(item.substr(eq + 1), 1, int64_t(1) << 32);
    if (!v)
      return err("key '" + key + "': expected an integer >= 1, got '" +
                 std::string(eq == std::string_view::npos ? "" : item.substr(eq + 1)) + "'");
    *it->second = *v;
  }
  for (const char *k : {"layers", "hidden", "heads", "seq", "vocab"})
    if (*keys[k] == 0)
      return err(std::string("missing key '") + k + "'");
  if (m.hidden % m.heads != 0)
    return err("key 'heads': " + std::to_string(m.heads) + " does not divide hidden " +
               std::to_string(m.hidden));
  if (m.ffn == 0)
    m.ffn = 4 * m.hidden;
  out = m;
  return rt::Status::success();
}

} // namespace trc::plan
