//===- AnomalyReport.h - where a non-finite step's NaN/inf began -*- C++ -*-===//
//
// --detect-anomaly: from the codes of a step's checked values (the
// `trc.anomaly` output, one per manifest `site`, bits of
// include/trc/Abi/AnomalySites.h) finds where the step's non-finite values
// began: the first site in program order that made a NaN from operands
// without one, and the op that made the inf it came from (or, in a step
// with inf but no NaN, the first op that computed an inf the last inf value
// traces back to; constants such as -inf attention masks are followed past
// when a computed one made it). Pure functions of the manifest's sites and
// the codes; no I/O.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_ANOMALYREPORT_H
#define TRC_RUNTIME_TRAIN_ANOMALYREPORT_H

#include "runtime/formats/Manifest.h"

#include <optional>
#include <string>
#include <vector>

namespace trc::rt {

struct AnomalyOrigin {
  std::optional<size_t> nan; // the first site that made a NaN from NaN-free operands
  std::optional<size_t> inf; // the op that made the inf behind it (or the step's inf)
};

/// Where the non-finite values began; both empty when every code is 0.
/// Precondition: codes.size() == sites.size(), operands precede their sites
/// (the manifest parser checks both).
AnomalyOrigin findAnomalyOrigin(const std::vector<Manifest::AnomalySite> &sites,
                                const std::vector<float> &codes);

/// A site as a message names it: "'trc.log' of node '/Log' (forward)",
/// "'trc.div' in the backward of node '/Sqrt'", "the input 'x'".
std::string describeSite(const Manifest::AnomalySite &site);

/// The clause a non-finite step's error gains: "NaN first made by ..., from
/// an inf made by ..."; "" when no site holds a non-finite value.
std::string describeAnomalyOrigin(const std::vector<Manifest::AnomalySite> &sites,
                                  const AnomalyOrigin &origin);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_ANOMALYREPORT_H
