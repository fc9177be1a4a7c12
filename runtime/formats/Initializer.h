//===- Initializer.h - parameters made from a recipe, not from bytes --------===//
//
// A manifest `init` record (docs/ARTIFACT.md, "Initialized parameters")
// replaces a parameter's bytes in weights.bin by a recipe: a constant, or a
// normal or uniform distribution with a seed. Element i of the full tensor
// (row-major, whatever shard of it a process holds) is a pure function of
// the record and i: the SplitMix64 stream of the seed, Box-Muller for
// normal, and a logarithm and cosine written out as fixed sequences of
// IEEE-754 binary64 +, -, *, / and sqrt (no library calls, no fused
// multiply-add: this file is compiled with -ffp-contract=off), so that every
// machine and backend (a host fill, a CUDA kernel that follows the same
// steps), every rank and every shard produces the same bits.
//
// deriveInitializer() is the compiler's side: the recipe that describes a
// tensor it has values for (constant, else uniform or normal with the
// tensor's own moments), see docs/ARTIFACT.md.
//
// Preconditions: fillInitializer's `out` holds `count` elements of `dtype`,
// which is f32, f64, f16 or bf16 (isInitializable).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_INITIALIZER_H
#define TRC_RUNTIME_INITIALIZER_H

#include "runtime/support/DType.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace trc::rt {

enum class InitKind { Constant, Normal, Uniform };
const char *initKindName(InitKind kind);

struct Initializer {
  InitKind kind = InitKind::Constant;
  // constant: a = the value; normal: a = mean, b = standard deviation;
  // uniform: a = low, b = high.
  double a = 0, b = 0;
  uint64_t seed = 0; // normal and uniform
};

// Element types an initializer can fill (the floating ones).
bool isInitializable(DType dtype);

// Element `index` of the full tensor, in binary64 (before rounding to the
// slot's dtype).
double initializerValue(const Initializer &init, uint64_t index);

// Writes elements [first, first + count) of the full tensor into `out` as
// `dtype`: f64 as computed, f32 rounded to nearest (ties to even), f16 and
// bf16 rounded from that f32 to nearest (ties to even).
void fillInitializer(const Initializer &init, DType dtype, uint64_t first,
                     uint64_t count, void *out);

// The n-th output (n = 0, 1, ...) of the SplitMix64 generator seeded with
// `seed`, and the double in [0, 1) made of its top 53 bits.
uint64_t splitmix64Output(uint64_t seed, uint64_t n);
double unitFromBits(uint64_t bits);

// The portable functions normal uses (exposed for tests): ln(x) for x in
// (0, 1], cos(2*pi*t) for t in [0, 1).
double portableLog(double x);
double portableCos2Pi(double t);

// A number as the manifest writes it: the shortest decimal that reads back
// as the same double (e.g. "0.02", "-1.5e-05"). `value` must be finite.
std::string formatInitNumber(double value);
// A finite decimal number, -?[0-9]+(.[0-9]+)?([eE][+-]?[0-9]+)?, read as the
// nearest double; false for anything else (inf, nan, hex, '+', overflow).
bool parseInitNumber(std::string_view text, double &value);

// The record's fields after the slot index: "normal 0 0.02 123".
std::string formatInitializer(const Initializer &init);

// The recipe for a tensor of `count` elements of `dtype` (isInitializable)
// at `data`, with `seed` for the random kinds. False (and nothing set) when
// no recipe describes it: a NaN or infinite element, or moments that
// overflow. See docs/ARTIFACT.md for the rule.
bool deriveInitializer(DType dtype, const void *data, uint64_t count,
                       uint64_t seed, Initializer &out);

// The per-parameter seed the compiler writes: splitmix64(seed XOR
// fnv1a64(name)).
uint64_t parameterSeed(uint64_t seed, std::string_view name);

} // namespace trc::rt

#endif // TRC_RUNTIME_INITIALIZER_H
