//===- AnomalyReport.cpp - where a non-finite step's NaN/inf began ---------===//
//
// See AnomalyReport.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/AnomalyReport.h"

#include "trc/Abi/AnomalySites.h"

#include <algorithm>

namespace trc::rt {
namespace {

bool has(float code, int bit) { return (int(code) & bit) != 0; }

/// Sites holding `bit` whose operands hold none of it, reached from
/// `starts` through operands holding `bit`: where that kind of value was
/// made. The first that computed it from operands wins over the first
/// constant or input.
std::optional<size_t> madeBy(const std::vector<Manifest::AnomalySite> &sites,
                             const std::vector<float> &codes, int bit,
                             const std::vector<size_t> &starts) {
  std::vector<bool> seen(sites.size());
  std::vector<size_t> work;
  for (size_t s : starts)
    if (!seen[s]) {
      seen[s] = true;
      work.push_back(s);
    }
  std::optional<size_t> computed, any;
  while (!work.empty()) {
    size_t s = work.back();
    work.pop_back();
    bool fromOperand = false;
    for (uint32_t o : sites[s].operands)
      if (has(codes[o], bit)) {
        fromOperand = true;
        if (!seen[o]) {
          seen[o] = true;
          work.push_back(o);
        }
      }
    if (fromOperand || !has(codes[s], bit))
      continue;
    any = std::min(any.value_or(s), s);
    if (!sites[s].operands.empty())
      computed = std::min(computed.value_or(s), s);
  }
  return computed ? computed : any;
}

} // namespace

AnomalyOrigin findAnomalyOrigin(const std::vector<Manifest::AnomalySite> &sites,
                                const std::vector<float> &codes) {
  AnomalyOrigin origin;
  for (size_t s = 0; s < sites.size() && !origin.nan; ++s)
    if (has(codes[s], abi::kAnomalyNaN) &&
        std::none_of(sites[s].operands.begin(), sites[s].operands.end(),
                     [&](uint32_t o) { return has(codes[o], abi::kAnomalyNaN); }))
      origin.nan = s;
  if (origin.nan) {
    // inf - inf, 0 * inf, inf / inf: the inf the NaN came from.
    std::vector<size_t> infOperands;
    for (uint32_t o : sites[*origin.nan].operands)
      if (has(codes[o], abi::kAnomalyInf))
        infOperands.push_back(o);
    origin.inf = madeBy(sites, codes, abi::kAnomalyInf, infOperands);
    return origin;
  }
  for (size_t s = sites.size(); s-- > 0;)
    if (has(codes[s], abi::kAnomalyInf))
      return {std::nullopt, madeBy(sites, codes, abi::kAnomalyInf, {s})};
  return origin;
}

std::string describeSite(const Manifest::AnomalySite &site) {
  if (site.phase == abi::kPhaseInput)
    return "the input '" + site.node + "'";
  if (site.phase == abi::kPhaseParameter)
    return "the parameter '" + site.node + "'";
  std::string op = "'" + site.op + "'";
  if (site.phase == abi::kPhaseOptimizer)
    return op + " of the optimizer update";
  std::string node = site.node.empty() ? "an op without an ONNX node" : "node '" + site.node + "'";
  if (site.phase == abi::kPhaseBackward)
    return op + " in the backward of " + node;
  return op + " of " + node + " (forward)";
}

std::string describeAnomalyOrigin(const std::vector<Manifest::AnomalySite> &sites,
                                  const AnomalyOrigin &origin) {
  // A collective's operands were finite here: the values came from another rank.
  auto describe = [&](size_t s) {
    const Manifest::AnomalySite &site = sites[s];
    bool collective = site.op.find("all_reduce") != std::string::npos ||
                      site.op.find("reduce_scatter") != std::string::npos ||
                      site.op.find("all_gather") != std::string::npos;
    return describeSite(site) +
           (collective ? " (finite on this rank: another rank's values)" : "");
  };
  if (origin.nan && origin.inf)
    return "NaN first made by " + describe(*origin.nan) + ", from an inf made by " +
           describe(*origin.inf);
  if (origin.nan)
    return "NaN first made by " + describe(*origin.nan);
  if (origin.inf)
    return "inf first made by " + describe(*origin.inf);
  return "";
}

} // namespace trc::rt
