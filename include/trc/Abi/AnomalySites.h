//===- AnomalySites.h - what --detect-anomaly's step reports -----*- C++ -*-===//
//
// What trc-detect-anomaly (the compiler), the artifact writer and the
// runtime agree on for `trc-run --detect-anomaly`: the training step has one
// more output, kAnomalyOutput (SlotNames.h), a 1-D f32 tensor with one code
// per checked value ("site"); the manifest's `site` records (docs/ARTIFACT.md:
// `site <id> <op> <node> <phase> <operands>`) say what each site is, in the
// step's program order. No dependencies.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_ABI_ANOMALYSITES_H
#define TRC_ABI_ANOMALYSITES_H

namespace trc::abi {

// A site's code: kAnomalyNaN if some element of its value is NaN, else
// kAnomalyInf if some is +-inf, else 0 (the max over the elements); read as
// bits, so that the runtime can OR the codes of a step's micro-steps.
inline constexpr int kAnomalyInf = 1;
inline constexpr int kAnomalyNaN = 2;

// A site's phase: where in the step its value is computed.
inline constexpr const char kPhaseInput[] = "input";         // a float graph input
inline constexpr const char kPhaseParameter[] = "parameter"; // a parameter as the step reads it
inline constexpr const char kPhaseForward[] = "forward";     // the model (and its loss)
inline constexpr const char kPhaseBackward[] = "backward";   // gradients (trc-autodiff)
inline constexpr const char kPhaseOptimizer[] = "optimizer"; // norm, clipping and the update

// The module attribute is kAnomalySitesAttr (AttrNames.h): one array of
// strings [op, node, phase, operands] per site, operands the ids of the
// sites the op reads, comma-separated ("" for none).

} // namespace trc::abi

#endif // TRC_ABI_ANOMALYSITES_H
