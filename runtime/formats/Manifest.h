//===- Manifest.h - the manifest.trc of a trc artifact ----------------------===//
//
// Parses manifest.trc exactly as docs/ARTIFACT.md specifies (format 1) into a
// Manifest. Every field is validated; an error is returned as a message that
// names the line and the field ("line 7: slot dtype: unknown dtype 'f128'
// ..."), never thrown. Checks beyond the grammar:
//   * the first record is `trc-artifact 1` and the last is `end`;
//   * target/program/entry/arena/weights appear exactly once, host_arena
//     (offloaded activations) at most once;
//   * slot indices are 0..S-1 without gaps or duplicates; names are unique
//     per kind (inputs, outputs, params);
//   * rank <= 64, dims >= 0, each tensor at most 2^40 elements;
//   * a param's offset is a multiple of 64 and its bytes lie inside weights;
//   * file names are plain names inside the artifact folder; their hashes
//     are checksums as Checksum.h spells them (xxh3:<hex>, or bare hex for
//     the FNV-1a 64 of manifests written before XXH3);
//   * a `shard` record follows its slot, whose shape is [ceil(full/degree)].
//   * `bound` and `labels` records follow their slot, an integer input,
//     each at most once.
//   * a `split` record follows its slot, before the slot's shard and init
//     records (params and inputs only, once per slot); the
//     split applies to its logical shape (TensorSplit.h's checkSplit), and
//     the slot's local shape (the shard's full shape when sharded) is that
//     shape with the split dim divided by the degree.
//   * a param's offset is '-' exactly when an `init` record (after the slot;
//     one per slot; floating dtypes only; finite decimal numbers, std >= 0,
//     low <= high, constants and means and bounds finite in the dtype)
//     gives its value instead of weights.bin.
//   * target cuda only: `cubin`/`ptx` records (chip sm_<major><minor>, one
//     of each kind per chip, plain file names distinct from each other and
//     from program/weights) and `kernel` records (indices 0..K-1 without gaps
//     or duplicates, names that are PTX symbols, unique); kernels need kernel
//     files and kernel files need kernels. Other targets have none of them.
//   * `span <id> <name> <node> <function>` records (optional, ids 0..S-1 in
//     order): the per-op spans a CPU program reports under --profile
//     (include/trc/Abi/ProfileSpans.h); an empty node is '-'.
//   * `site <id> <op> <node> <phase> <operands>` records (optional, ids
//     0..N-1 in order; phase one of AnomalySites.h's; operands the ids of
//     earlier sites, comma-separated, '-' for none): what each code of a
//     --detect-anomaly step's `trc.anomaly` output (f32[N], required with
//     them) is.
// Preconditions: none; any byte string may be passed.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_MANIFEST_H
#define TRC_RUNTIME_MANIFEST_H

#include "runtime/support/DType.h"
#include "runtime/formats/Initializer.h"
#include "runtime/formats/Checksum.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorSplit.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

// "sm_<major><minor>": the last digit is the minor version, the digits
// before it the major ("sm_90" -> 9.0, "sm_120" -> 12.0). False for any
// other spelling (no "sm_90a", no leading zero, major 1..99).
bool parseCudaChip(std::string_view chip, int &major, int &minor);


enum class SlotKind { Input, Output, Param };
const char *slotKindName(SlotKind kind);

struct Slot {
  int64_t index = 0;
  SlotKind kind = SlotKind::Input;
  std::string name; // decoded
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numElements = 0;
  uint64_t byteSize = 0;
  uint64_t offset = 0;    // params only: byte offset in weights.bin
  // Params only: offset '-' and an `init` record: the value is made from
  // `init` (element i of the full tensor, docs/ARTIFACT.md), not read.
  bool initialized = false;
  Initializer init;
  int initLine = 0; // the `init` record's line (0: none yet)
  bool trainable = false; // params only
  int line = 0;           // where it was declared (for messages)
  // A `shard` record: the slot holds one rank's 1-D shard (ceil(full /
  // degree) elements, zero-padded) of a tensor of `fullShape`; a sharded
  // param's weights hold the full tensor. 0 when not sharded.
  int64_t shardDegree = 0;
  std::vector<int64_t> fullShape;
  int64_t fullElements = 0;
  // A `split` record (tensor parallelism): the slot's tensor (its own
  // shape, or `fullShape` when also sharded: ZeRO shards the part) is one
  // tensor rank's part (TensorSplit.h) of a logical tensor of `splitShape`;
  // a split param's weights hold the logical tensor. degree 0: not split.
  TensorSplit split{0, 1, 0};
  std::vector<int64_t> splitShape;
  int64_t splitElements = 0;
  int splitLine = 0; // the `split` record's line
  // A `bound` record (integer inputs only): the input indexes a table of
  // this many rows, so its elements lie in [-indexBound, indexBound)
  // (negative: from the end, as ONNX's Gather). 0: unbounded.
  int64_t indexBound = 0;
  // A `labels` record (integer inputs only): a cross-entropy loss's labels,
  // in [0, labelClasses) or equal to labelIgnore. 0: unchecked.
  int64_t labelClasses = 0;
  std::optional<int64_t> labelIgnore;
  bool isSplit() const { return split.degree > 0; }
  // The tensor-rank-local tensor: what a shard is gathered to, or the slot.
  const std::vector<int64_t> &localShape() const { return shardDegree ? fullShape : shape; }
  int64_t localElements() const { return shardDegree ? fullElements : numElements; }
  // The logical tensor (checkpoints, exports, weights.bin).
  const std::vector<int64_t> &logicalShape() const {
    return isSplit() ? splitShape : localShape();
  }
  // Elements of the logical tensor whose values the slot holds (all, a
  // shard, a tensor rank's part, or a shard of that part).
  int64_t tensorElements() const { return isSplit() ? splitElements : localElements(); }
  // Bytes of the slot's data in weights.bin (the logical tensor when sharded
  // or split; none when initialized).
  uint64_t weightBytes() const {
    if (initialized)
      return 0;
    return uint64_t(tensorElements()) * dtypeSize(dtype);
  }
};

// A `cubin` or `ptx` record (target cuda).
struct KernelFile {
  bool ptx = false;
  std::string chip; // "sm_90"
  int major = 0, minor = 0;
  std::string file;
  uint64_t bytes = 0;
  Checksum hash;
  int line = 0;
};

struct Manifest {
  int version = 0;
  std::string target;
  std::string programFile;
  uint64_t programBytes = 0;
  Checksum programHash;
  std::string entry;
  uint64_t arenaBytes = 0;
  uint64_t hostArenaBytes = 0; // `host_arena` (offloaded activations); 0 without it
  std::string weightsFile;
  uint64_t weightsBytes = 0;
  Checksum weightsHash;
  std::vector<Slot> slots; // sorted by index; slots[i].index == i
  // Target cuda: the kernel files in manifest order, and the kernel table
  // (decoded names; kernels[i] is kernel i).
  std::vector<KernelFile> kernelFiles;
  std::vector<std::string> kernels;
  // Profile spans (trc-profile-calls): spans[id].
  struct ProfileSpan {
    std::string name, node, function;
  };
  std::vector<ProfileSpan> spans;
  // --detect-anomaly's sites (trc-detect-anomaly): anomalySites[id].
  struct AnomalySite {
    std::string op, node, phase;
    std::vector<uint32_t> operands; // earlier sites' ids
  };
  std::vector<AnomalySite> anomalySites;

  // The slot of that kind and (decoded) name, or null.
  const Slot *find(SlotKind kind, std::string_view name) const;
  std::vector<const Slot *> slotsOfKind(SlotKind kind) const;
};

// Largest arena the runtime accepts (2^48 bytes).
constexpr uint64_t kMaxArenaBytes = uint64_t(1) << 48;

/// Parses `text` into a manifest; the message of a failure names the line
/// number (1-based) and field.
StatusOr<Manifest> parseManifest(std::string_view text);

} // namespace trc::rt

#endif // TRC_RUNTIME_MANIFEST_H
