//===- Manifest.cpp - the manifest.trc of a trc artifact --------------------===//
//
// A line-by-line parser of manifest format 1 (see Manifest.h and
// docs/ARTIFACT.md). Each record is split on single spaces and checked field
// by field; messages are "line N: <record> <field>: <problem>".
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Manifest.h"
#include "trc/Abi/AnomalySites.h"
#include "trc/Abi/ArtifactNames.h"
#include "trc/Abi/SlotNames.h"

#include "runtime/formats/Checksum.h"
#include "runtime/support/Names.h"
#include "runtime/support/Parse.h"

#include "runtime/support/HalfFloat.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace trc::rt {

bool parseCudaChip(std::string_view chip, int &major, int &minor) {
  constexpr std::string_view prefix = "sm_";
  if (chip.size() < prefix.size() + 2 || chip.size() > prefix.size() + 3 ||
      chip.substr(0, prefix.size()) != prefix)
    return false;
  std::string_view digits = chip.substr(prefix.size());
  for (char c : digits)
    if (c < '0' || c > '9')
      return false;
  if (digits[0] == '0')
    return false;
  int value = 0;
  for (char c : digits)
    value = value * 10 + (c - '0');
  major = value / 10;
  minor = value % 10;
  return true;
}


const char *slotKindName(SlotKind kind) {
  switch (kind) {
  case SlotKind::Input:
    return "input";
  case SlotKind::Output:
    return "output";
  case SlotKind::Param:
    return "param";
  }
  return "?";
}

const Slot *Manifest::find(SlotKind kind, std::string_view name) const {
  for (const Slot &slot : slots)
    if (slot.kind == kind && slot.name == name)
      return &slot;
  return nullptr;
}

std::vector<const Slot *> Manifest::slotsOfKind(SlotKind kind) const {
  std::vector<const Slot *> result;
  for (const Slot &slot : slots)
    if (slot.kind == kind)
      result.push_back(&slot);
  return result;
}

namespace {

// Shows a field in a message: quoted, at most 64 bytes, unprintable bytes
// escaped, so a hostile manifest cannot flood or corrupt the terminal.
std::string quote(std::string_view field) {
  std::string s = "'";
  size_t n = std::min<size_t>(field.size(), 64);
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(field[i]);
    if (c < 0x20 || c >= 0x7f) {
      static const char digits[] = "0123456789abcdef";
      s += "\\x";
      s += digits[c >> 4];
      s += digits[c & 0xf];
    } else {
      s += static_cast<char>(c);
    }
  }
  if (field.size() > n)
    s += "...";
  return s + "'";
}

// A non-negative decimal integer that fits in uint64 (no sign, no spaces).
// The dtypes of indices (ONNX's Gather takes int32 and int64).
bool isIndexDType(DType dtype) { return dtype == DType::I32 || dtype == DType::I64; }

bool parseUnsigned(std::string_view text, uint64_t &value) {
  std::optional<uint64_t> v = parseUint64(text);
  if (v)
    value = *v;
  return v.has_value();
}

bool isPlainFileName(std::string_view name) {
  if (name.empty() || name.size() > 255 || name[0] == '.')
    return false;
  for (char c : name) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok)
      return false;
  }
  return true;
}

bool isIdentifier(std::string_view name) {
  if (name.empty() || name.size() > 255)
    return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0))
      return false;
  }
  return true;
}

// A kernel symbol as PTX spells it: [A-Za-z_$][A-Za-z0-9_$]*.
bool isKernelSymbol(std::string_view name) {
  if (name.empty() || name.size() > 255)
    return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || c == '$';
    bool digit = c >= '0' && c <= '9';
    if (!alpha && !(digit && i > 0))
      return false;
  }
  return true;
}

bool isAnomalyPhase(std::string_view phase) {
  for (const char *known : {abi::kPhaseInput, abi::kPhaseParameter, abi::kPhaseForward,
                            abi::kPhaseBackward, abi::kPhaseOptimizer})
    if (phase == known)
      return true;
  return false;
}

bool isTargetName(std::string_view name) {
  if (name.empty() || name.size() > 64)
    return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  return true;
}

class Parser {
public:
  explicit Parser(Manifest &out) : m(out) {}
  Status parse(std::string_view text);

private:
  Status fail(const std::string &what) {
    return Status::error("line " + std::to_string(line) + ": " + what);
  }
  Status parseRecord(const std::vector<std::string_view> &f);
  Status parseFileRecord(const std::vector<std::string_view> &f,
                         const char *record, std::string &file, uint64_t &bytes,
                         Checksum &hash);
  Status parseSlot(const std::vector<std::string_view> &f);
  Status parseShard(const std::vector<std::string_view> &f);
  Status parseSplit(const std::vector<std::string_view> &f);
  Status parseBound(const std::vector<std::string_view> &f);
  Status parseLabels(const std::vector<std::string_view> &f);
  Status parseInit(const std::vector<std::string_view> &f);
  Status parseKernelFile(const std::vector<std::string_view> &f, bool ptx);
  Status parseKernel(const std::vector<std::string_view> &f);
  Status parseNumberedRecord(const std::vector<std::string_view> &f, const char *keyword,
                             const char *names, size_t next,
                             const std::vector<std::string *> &fields);
  Status parseSpan(const std::vector<std::string_view> &f);
  Status parseSite(const std::vector<std::string_view> &f);
  /// The slot declared with `index` (shard and init records refer to one).
  Slot *declaredSlot(uint64_t index) {
    for (Slot &s : m.slots)
      if (s.index == int64_t(index))
        return &s;
    return nullptr;
  }
  Status once(const char *record) {
    auto [it, inserted] = seen.emplace(record, line);
    if (!inserted)
      return fail(std::string("duplicate '") + record + "' record (first at line " +
                  std::to_string(it->second) + ")");
    return Status::success();
  }
  Status finish();

  Manifest &m;
  int line = 0;
  int siteLine = 0; // the first `site` record's
  bool sawHeader = false;
  bool sawEnd = false;
  std::map<std::string, int> seen; // record keyword -> line
  std::map<int64_t, int> indexLines; // slot index -> line
  std::map<std::pair<int, std::string>, int> nameLines; // (kind, name) -> line
  std::map<std::pair<bool, std::string>, int> chipLines; // (ptx, chip) -> line
  std::map<int64_t, std::pair<int, std::string>> kernelLines; // index -> (line, name)
  std::map<std::string, int> kernelNameLines; // name -> line
};

Status Parser::parse(std::string_view text) {
  m = Manifest();
  if (text.empty()) {
    line = 1;
    return fail("the manifest is empty");
  }
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view raw =
        text.substr(pos, nl == std::string_view::npos ? std::string_view::npos
                                                      : nl - pos);
    pos = nl == std::string_view::npos ? text.size() : nl + 1;
    ++line;
    if (!raw.empty() && raw.back() == '\r')
      raw.remove_suffix(1);
    if (!raw.empty() && raw[0] == '#')
      continue;
    if (raw.empty()) {
      if (!sawHeader)
        return fail("expected 'trc-artifact 1' as the first record, got an "
                    "empty line");
      continue;
    }
    if (sawEnd)
      return fail("record " + quote(raw.substr(0, raw.find(' '))) +
                  " after 'end' (end must be the last record)");

    std::vector<std::string_view> fields = splitText(raw, ' ');
    for (std::string_view f : fields)
      if (f.empty())
        return fail("empty field (fields are separated by single spaces)");

    if (!sawHeader) {
      if (fields[0] != abi::kManifestMagic)
        return fail("expected 'trc-artifact 1' as the first record, got " +
                    quote(raw) + " (not a trc manifest)");
      if (fields.size() != 2)
        return fail("trc-artifact: expected one field (the format version), "
                    "got " +
                    std::to_string(fields.size() - 1));
      if (fields[1] != std::to_string(abi::kManifestVersion))
        return fail("trc-artifact version: unsupported format version " +
                    quote(fields[1]) + " (this runtime reads format " +
                    std::to_string(abi::kManifestVersion) + ")");
      m.version = abi::kManifestVersion;
      sawHeader = true;
      continue;
    }
    if (Status s = parseRecord(fields); !s)
      return s;
  }
  return finish();
}

Status Parser::parseFileRecord(const std::vector<std::string_view> &f,
                               const char *record, std::string &file,
                               uint64_t &bytes, Checksum &hash) {
  std::string r = record;
  if (f.size() != 4)
    return fail(r + ": expected 3 fields (file, bytes, checksum), got " +
                std::to_string(f.size() - 1));
  if (!isPlainFileName(f[1]))
    return fail(r + " file: " + quote(f[1]) +
                " is not a plain file name inside the artifact folder");
  if (!parseUnsigned(f[2], bytes))
    return fail(r + " bytes: " + quote(f[2]) +
                " is not a non-negative decimal integer");
  if (!parseChecksum(f[3], hash))
    return fail(r + " checksum: " + quote(f[3]) +
                " is not xxh3:<16 lower-case hex digits> (or 16 hex digits "
                "alone, FNV-1a 64)");
  file = std::string(f[1]);
  return Status::success();
}

Status Parser::parseRecord(const std::vector<std::string_view> &f) {
  std::string_view kw = f[0];
  if (kw == "end") {
    if (f.size() != 1)
      return fail("end: expected no fields, got " + std::to_string(f.size() - 1));
    sawEnd = true;
    return Status::success();
  }
  if (kw == "slot")
    return parseSlot(f);
  if (kw == "shard")
    return parseShard(f);
  if (kw == "split")
    return parseSplit(f);
  if (kw == "bound")
    return parseBound(f);
  if (kw == "labels")
    return parseLabels(f);
  if (kw == "init")
    return parseInit(f);
  if (kw == "cubin" || kw == "ptx")
    return parseKernelFile(f, kw == "ptx");
  if (kw == "kernel")
    return parseKernel(f);
  if (kw == "span")
    return parseSpan(f);
  if (kw == "site")
    return parseSite(f);
  if (kw == "target") {
    if (Status s = once("target"); !s)
      return s;
    if (f.size() != 2)
      return fail("target: expected one field, got " +
                  std::to_string(f.size() - 1));
    if (!isTargetName(f[1]))
      return fail("target name: " + quote(f[1]) + " is not a target name");
    m.target = std::string(f[1]);
    return Status::success();
  }
  if (kw == "program") {
    if (Status s = once("program"); !s)
      return s;
    return parseFileRecord(f, "program", m.programFile, m.programBytes,
                           m.programHash);
  }
  if (kw == "weights") {
    if (Status s = once("weights"); !s)
      return s;
    return parseFileRecord(f, "weights", m.weightsFile, m.weightsBytes,
                           m.weightsHash);
  }
  if (kw == "entry") {
    if (Status s = once("entry"); !s)
      return s;
    if (f.size() != 2)
      return fail("entry: expected one field (the symbol), got " +
                  std::to_string(f.size() - 1));
    if (!isIdentifier(f[1]))
      return fail("entry symbol: " + quote(f[1]) + " is not a C identifier");
    m.entry = std::string(f[1]);
    return Status::success();
  }
  if (kw == "arena") {
    if (Status s = once("arena"); !s)
      return s;
    if (f.size() != 2)
      return fail("arena: expected one field (bytes), got " +
                  std::to_string(f.size() - 1));
    if (!parseUnsigned(f[1], m.arenaBytes))
      return fail("arena bytes: " + quote(f[1]) +
                  " is not a non-negative decimal integer");
    if (m.arenaBytes > kMaxArenaBytes)
      return fail("arena bytes: " + std::string(f[1]) +
                  " is absurd (more than 2^48 bytes)");
    return Status::success();
  }
  if (kw == "host_arena") {
    if (Status s = once("host_arena"); !s)
      return s;
    if (f.size() != 2)
      return fail("host_arena: expected one field (bytes), got " +
                  std::to_string(f.size() - 1));
    if (!parseUnsigned(f[1], m.hostArenaBytes))
      return fail("host_arena bytes: " + quote(f[1]) +
                  " is not a non-negative decimal integer");
    if (m.hostArenaBytes > kMaxArenaBytes)
      return fail("host_arena bytes: " + std::string(f[1]) +
                  " is absurd (more than 2^48 bytes)");
    return Status::success();
  }
  if (kw == abi::kManifestMagic)
    return fail("duplicate 'trc-artifact' record");
  return fail("unknown record " + quote(kw));
}

Status Parser::parseSlot(const std::vector<std::string_view> &f) {
  // slot <index> <kind> <name> <dtype> <rank> <dims...> [<offset> <use>]
  if (f.size() < 6)
    return fail("slot: expected at least 5 fields (index, kind, name, dtype, "
                "rank), got " +
                std::to_string(f.size() - 1));
  Slot slot;
  slot.line = line;
  uint64_t index = 0;
  if (!parseUnsigned(f[1], index) || index > (uint64_t(1) << 31))
    return fail("slot index: " + quote(f[1]) +
                " is not a slot index (a non-negative integer)");
  slot.index = int64_t(index);

  if (f[2] == "input")
    slot.kind = SlotKind::Input;
  else if (f[2] == "output")
    slot.kind = SlotKind::Output;
  else if (f[2] == "param")
    slot.kind = SlotKind::Param;
  else
    return fail("slot kind: unknown kind " + quote(f[2]) +
                " (expected input, output or param)");

  std::string problem;
  if (!percentDecode(f[3], slot.name, problem))
    return fail("slot name: " + quote(f[3]) + ": " + problem);

  if (!parseDType(f[4], slot.dtype))
    return fail("slot dtype: unknown dtype " + quote(f[4]) + " (expected one of " +
                dtypeList() + ")");

  uint64_t rank = 0;
  if (!parseUnsigned(f[5], rank))
    return fail("slot rank: " + quote(f[5]) +
                " is not a non-negative decimal integer");
  if (rank > uint64_t(kMaxRank))
    return fail("slot rank: rank " + std::string(f[5]) +
                " is more than the maximum of " + std::to_string(kMaxRank));
  size_t tail = slot.kind == SlotKind::Param ? 2 : 0;
  size_t have = f.size() - 6;
  if (have != rank + tail) {
    std::string expected = std::to_string(rank) + " dims";
    if (tail)
      expected += ", then offset and trainable|frozen";
    return fail("slot dims: rank " + std::to_string(rank) + " needs " +
                std::to_string(rank + tail) + " fields after the rank (" +
                expected + "), got " + std::to_string(have));
  }
  for (uint64_t i = 0; i < rank; ++i) {
    uint64_t d = 0;
    std::string_view field = f[6 + i];
    if (!parseUnsigned(field, d))
      return fail("slot dim " + std::to_string(i) + ": " + quote(field) +
                  " is not a non-negative decimal integer");
    if (d > uint64_t(kMaxElements))
      return fail("slot dim " + std::to_string(i) + ": " + std::string(field) +
                  " is absurd (more than 2^40)");
    slot.shape.push_back(int64_t(d));
  }
  if (!elementCount(slot.shape, slot.numElements))
    return fail("slot shape: " + formatShape(slot.shape) +
                " has more than 2^40 elements");
  slot.byteSize = uint64_t(slot.numElements) * dtypeSize(slot.dtype);

  if (slot.kind == SlotKind::Param) {
    std::string_view offField = f[6 + rank];
    std::string_view useField = f[7 + rank];
    if (offField == "-")
      slot.initialized = true; // an `init` record must follow
    else if (!parseUnsigned(offField, slot.offset))
      return fail("slot offset: " + quote(offField) +
                  " is not a non-negative decimal integer (or '-' for a param "
                  "made by an init record)");
    if (slot.offset % 64 != 0)
      return fail("slot offset: " + std::string(offField) +
                  " is not a multiple of 64");
    if (useField == "trainable")
      slot.trainable = true;
    else if (useField == "frozen")
      slot.trainable = false;
    else
      return fail("slot trainable: expected 'trainable' or 'frozen', got " +
                  quote(useField));
  }

  auto [byIndex, newIndex] = indexLines.emplace(slot.index, line);
  if (!newIndex)
    return fail("slot index: duplicate slot index " + std::to_string(slot.index) +
                " (first at line " + std::to_string(byIndex->second) + ")");
  auto [byName, newName] =
      nameLines.emplace(std::make_pair(int(slot.kind), slot.name), line);
  if (!newName)
    return fail("slot name: duplicate " + std::string(slotKindName(slot.kind)) +
                " name '" + percentEncode(slot.name) + "' (first at line " +
                std::to_string(byName->second) + ")");
  m.slots.push_back(std::move(slot));
  return Status::success();
}

// shard <slot index> <degree> <rank> <d0> ... <dN-1>: the slot (declared
// above) holds one rank's 1-D shard of a tensor of that full shape.
Status Parser::parseShard(const std::vector<std::string_view> &f) {
  uint64_t index = 0, degree = 0, rank = 0;
  if (f.size() < 4 || !parseUnsigned(f[1], index) || !parseUnsigned(f[2], degree) ||
      !parseUnsigned(f[3], rank))
    return fail("shard: expected slot index, degree, rank and dims");
  if (degree < 1 || degree > (uint64_t(1) << 20))
    return fail("shard degree: " + quote(f[2]) + " is not a number of ranks");
  if (rank > uint64_t(kMaxRank) || f.size() - 4 != rank)
    return fail("shard dims: rank " + std::string(f[3]) + " needs that many dims, got " +
                std::to_string(f.size() - 4));
  Slot *slot = declaredSlot(index);
  if (!slot)
    return fail("shard: no slot " + std::string(f[1]) + " declared before this record");
  if (slot->shardDegree)
    return fail("shard: slot " + std::string(f[1]) + " is already sharded");
  std::vector<int64_t> full;
  for (size_t i = 4; i < f.size(); ++i) {
    uint64_t d = 0;
    if (!parseUnsigned(f[i], d) || d > uint64_t(kMaxElements))
      return fail("shard dim: " + quote(f[i]) + " is not a dimension");
    full.push_back(int64_t(d));
  }
  int64_t fullElements = 0;
  if (!elementCount(full, fullElements))
    return fail("shard shape: " + formatShape(full) + " has more than 2^40 elements");
  int64_t chunk = (fullElements + int64_t(degree) - 1) / int64_t(degree);
  if (slot->shape.size() != 1 || slot->numElements != chunk)
    return fail("shard: slot " + std::string(f[1]) + " " + formatShape(slot->shape) +
                " is not a 1/" + std::string(f[2]) + " shard of " + formatShape(full) +
                " (expected [" + std::to_string(chunk) + "])");
  slot->shardDegree = int64_t(degree);
  slot->fullShape = std::move(full);
  slot->fullElements = fullElements;
  return Status::success();
}

// bound <slot index> <rows>: the integer input (declared above) indexes a
// table of `rows` rows (an embedding lookup): its elements must lie in
// [-rows, rows) (a negative index counts from the end, as ONNX's Gather).
Status Parser::parseBound(const std::vector<std::string_view> &f) {
  uint64_t index = 0, rows = 0;
  if (f.size() != 3 || !parseUnsigned(f[1], index) || !parseUnsigned(f[2], rows))
    return fail("bound: expected slot index and rows");
  if (rows < 1 || rows > uint64_t(kMaxElements))
    return fail("bound rows: " + quote(f[2]) + " is not a number of rows");
  Slot *slot = declaredSlot(index);
  if (!slot)
    return fail("bound: no slot " + std::string(f[1]) + " declared before this record");
  if (slot->kind != SlotKind::Input || !isIndexDType(slot->dtype))
    return fail("bound: slot " + std::string(f[1]) + " is not an integer input");
  if (slot->indexBound)
    return fail("bound: slot " + std::string(f[1]) + " is already bounded");
  slot->indexBound = int64_t(rows);
  return Status::success();
}

// labels <slot index> <classes> [<ignore index>]: the integer input
// (declared above) is a cross-entropy loss's labels: its elements lie in
// [0, classes) or equal the ignore index.
Status Parser::parseLabels(const std::vector<std::string_view> &f) {
  uint64_t index = 0, classes = 0;
  if ((f.size() != 3 && f.size() != 4) || !parseUnsigned(f[1], index) ||
      !parseUnsigned(f[2], classes))
    return fail("labels: expected slot index, classes and an optional ignore index");
  if (classes < 1 || classes > uint64_t(kMaxElements))
    return fail("labels classes: " + quote(f[2]) + " is not a number of classes");
  std::optional<int64_t> ignore;
  if (f.size() == 4) {
    ignore = parseInt64(f[3]);
    if (!ignore)
      return fail("labels ignore index: " + quote(f[3]) + " is not an integer");
  }
  Slot *slot = declaredSlot(index);
  if (!slot)
    return fail("labels: no slot " + std::string(f[1]) + " declared before this record");
  if (slot->kind != SlotKind::Input || !isIndexDType(slot->dtype))
    return fail("labels: slot " + std::string(f[1]) + " is not an integer input");
  if (slot->labelClasses)
    return fail("labels: slot " + std::string(f[1]) + " already has its classes");
  slot->labelClasses = int64_t(classes);
  slot->labelIgnore = ignore;
  return Status::success();
}

// split <slot index> <dim> <blocks> <degree> <rank> <d0> ... <dN-1>
// [mirrored]: the slot (declared above; its shard and init records, if
// any, come after this one) holds one tensor rank's part of a logical
// tensor of that shape (TensorSplit.h). Its local shape is checked in
// finish(), once a shard record may have given it.
Status Parser::parseSplit(const std::vector<std::string_view> &f) {
  uint64_t index = 0, dim = 0, blocks = 0, degree = 0, rank = 0;
  if (f.size() < 6 || !parseUnsigned(f[1], index) || !parseUnsigned(f[2], dim) ||
      !parseUnsigned(f[3], blocks) || !parseUnsigned(f[4], degree) ||
      !parseUnsigned(f[5], rank))
    return fail("split: expected slot index, dim, blocks, degree, rank and dims");
  if (degree < 1 || degree > (uint64_t(1) << 20))
    return fail("split degree: " + quote(f[4]) + " is not a number of ranks");
  if (blocks < 1 || blocks > (uint64_t(1) << 20))
    return fail("split blocks: " + quote(f[3]) + " is not a number of blocks");
  const bool mirrored = f.size() > 6 && f.back() == "mirrored";
  const size_t dims = f.size() - 6 - (mirrored ? 1 : 0);
  if (rank > uint64_t(kMaxRank) || dims != rank)
    return fail("split dims: rank " + std::string(f[5]) + " needs that many dims, got " +
                std::to_string(dims));
  Slot *slot = declaredSlot(index);
  if (!slot)
    return fail("split: no slot " + std::string(f[1]) + " declared before this record");
  std::string label = "split: slot " + std::string(f[1]);
  if (slot->kind == SlotKind::Output)
    return fail(label + " is an output; params and inputs are split");
  if (slot->isSplit())
    return fail(label + " is already split (line " + std::to_string(slot->splitLine) + ")");
  if (slot->shardDegree || slot->initLine)
    return fail(label + ": the split record comes before the slot's " +
                (slot->shardDegree ? "shard" : "init") + " record");
  std::vector<int64_t> full;
  for (size_t i = 6; i < 6 + dims; ++i) {
    uint64_t d = 0;
    if (!parseUnsigned(f[i], d) || d > uint64_t(kMaxElements))
      return fail("split dim: " + quote(f[i]) + " is not a dimension");
    full.push_back(int64_t(d));
  }
  int64_t fullElements = 0;
  if (!elementCount(full, fullElements))
    return fail("split shape: " + formatShape(full) + " has more than 2^40 elements");
  TensorSplit split{int64_t(std::min<uint64_t>(dim, kMaxRank + 1)), int64_t(blocks),
                    int64_t(degree), mirrored};
  if (Status s = checkSplit(full, split); !s)
    return fail(label + ": " + s.message());
  slot->split = split;
  slot->splitShape = std::move(full);
  slot->splitElements = fullElements;
  slot->splitLine = line;
  return Status::success();
}

// init <slot index> constant <value>
// init <slot index> normal <mean> <std> <seed>
// init <slot index> uniform <low> <high> <seed>
// The param slot (declared above, offset '-') is made from this recipe.
Status Parser::parseInit(const std::vector<std::string_view> &f) {
  if (f.size() < 3)
    return fail("init: expected a slot index, a kind (constant, normal or uniform) "
                "and its fields");
  uint64_t index = 0;
  if (!parseUnsigned(f[1], index) || index > (uint64_t(1) << 31))
    return fail("init slot: " + quote(f[1]) + " is not a slot index");
  Slot *slot = declaredSlot(index);
  if (!slot)
    return fail("init: no slot " + std::string(f[1]) + " declared before this record");
  std::string label = "init: slot " + std::string(f[1]);
  if (slot->kind != SlotKind::Param)
    return fail(label + " is an " + slotKindName(slot->kind) +
                "; only params have initializers");
  if (slot->initLine)
    return fail(label + " already has an initializer (line " +
                std::to_string(slot->initLine) + ")");
  if (!slot->initialized)
    return fail(label + ": param '" + percentEncode(slot->name) +
                "' has its value in weights.bin (offset " + std::to_string(slot->offset) +
                "); a param made by an init record has offset '-'");
  if (!isInitializable(slot->dtype))
    return fail(label + ": param '" + percentEncode(slot->name) + "' is " +
                dtypeName(slot->dtype) + "; initializers make f32, f64, f16 and bf16 params");

  Initializer init;
  const char *names[2];
  size_t numbers = 0;
  if (f[2] == "constant") {
    init.kind = InitKind::Constant;
    numbers = 1;
    names[0] = "value";
  } else if (f[2] == "normal") {
    init.kind = InitKind::Normal;
    numbers = 2;
    names[0] = "mean";
    names[1] = "std";
  } else if (f[2] == "uniform") {
    init.kind = InitKind::Uniform;
    numbers = 2;
    names[0] = "low";
    names[1] = "high";
  } else {
    return fail("init kind: unknown kind " + quote(f[2]) +
                " (expected constant, normal or uniform)");
  }
  size_t fields = 2 + numbers + (numbers == 2 ? 1 : 0);
  if (f.size() - 1 != fields)
    return fail("init " + std::string(f[2]) + ": expected " + std::to_string(fields) +
                " fields (slot, kind, " +
                (numbers == 1 ? std::string("value") :
                 std::string(names[0]) + ", " + names[1] + ", seed") +
                "), got " + std::to_string(f.size() - 1));
  double values[2] = {0, 0};
  for (size_t i = 0; i < numbers; ++i) {
    std::string_view field = f[3 + i];
    if (!parseInitNumber(field, values[i]))
      return fail("init " + std::string(names[i]) + ": " + quote(field) +
                  " is not a finite decimal number");
    // The values must exist in the param's dtype.
    bool representable = true;
    if (slot->dtype == DType::F32 || slot->dtype == DType::F16 || slot->dtype == DType::BF16) {
      float narrow = float(values[i]);
      representable = std::isfinite(narrow);
      if (slot->dtype == DType::F16)
        representable = representable && (floatToF16(narrow) & 0x7c00u) != 0x7c00u;
    }
    if (i == 0 || init.kind == InitKind::Uniform)
      if (!representable)
        return fail("init " + std::string(names[i]) + ": " + std::string(field) +
                    " is out of range for " + dtypeName(slot->dtype));
  }
  init.a = values[0];
  init.b = values[1];
  if (init.kind == InitKind::Normal && init.b < 0)
    return fail("init std: " + std::string(f[4]) + " is negative");
  if (init.kind == InitKind::Uniform && init.a > init.b)
    return fail("init uniform: low " + std::string(f[3]) + " is above high " +
                std::string(f[4]));
  if (init.kind == InitKind::Uniform && !std::isfinite(init.b - init.a))
    return fail("init uniform: the range from " + std::string(f[3]) + " to " +
                std::string(f[4]) + " overflows");
  if (numbers == 2 && !parseUnsigned(f[5], init.seed))
    return fail("init seed: " + quote(f[5]) + " is not a 64-bit unsigned decimal integer");
  slot->init = init;
  slot->initLine = line;
  return Status::success();
}

// cubin|ptx <chip> <file> <bytes> <checksum> (target cuda).
Status Parser::parseKernelFile(const std::vector<std::string_view> &f, bool ptx) {
  std::string r = ptx ? "ptx" : "cubin";
  if (f.size() != 5)
    return fail(r + ": expected 4 fields (chip, file, bytes, checksum), got " +
                std::to_string(f.size() - 1));
  KernelFile k;
  k.ptx = ptx;
  k.line = line;
  if (!parseCudaChip(f[1], k.major, k.minor))
    return fail(r + " chip: " + quote(f[1]) +
                " is not a chip name (sm_<major><minor>, e.g. sm_90)");
  k.chip = std::string(f[1]);
  auto [it, inserted] = chipLines.emplace(std::make_pair(ptx, k.chip), line);
  if (!inserted)
    return fail(r + " chip: duplicate " + r + " for " + k.chip + " (first at line " +
                std::to_string(it->second) + ")");
  std::vector<std::string_view> fileFields(f.begin() + 1, f.end());
  if (Status s = parseFileRecord(fileFields, r.c_str(), k.file, k.bytes, k.hash); !s)
    return s;
  m.kernelFiles.push_back(std::move(k));
  return Status::success();
}

// kernel <index> <name> (target cuda).
Status Parser::parseKernel(const std::vector<std::string_view> &f) {
  if (f.size() != 3)
    return fail("kernel: expected 2 fields (index, name), got " +
                std::to_string(f.size() - 1));
  uint64_t index = 0;
  if (!parseUnsigned(f[1], index) || index > (uint64_t(1) << 31))
    return fail("kernel index: " + quote(f[1]) +
                " is not a kernel index (a non-negative integer)");
  std::string name, problem;
  if (!percentDecode(f[2], name, problem))
    return fail("kernel name: " + quote(f[2]) + ": " + problem);
  if (!isKernelSymbol(name))
    return fail("kernel name: " + quote(f[2]) +
                " is not a kernel symbol ([A-Za-z_$][A-Za-z0-9_$]*)");
  auto [byIndex, newIndex] =
      kernelLines.emplace(int64_t(index), std::make_pair(line, name));
  if (!newIndex)
    return fail("kernel index: duplicate kernel index " + std::to_string(index) +
                " (first at line " + std::to_string(byIndex->second.first) + ")");
  auto [byName, newName] = kernelNameLines.emplace(name, line);
  if (!newName)
    return fail("kernel name: duplicate kernel '" + percentEncode(name) +
                "' (first at line " + std::to_string(byName->second) + ")");
  return Status::success();
}

// `<keyword> <id> <field>...` (span, site): the id the next in order from
// `next`'s count, each field percent-decoded into `fields` ('-' is empty);
// `names` lists the fields for the message.
Status Parser::parseNumberedRecord(const std::vector<std::string_view> &f, const char *keyword,
                                   const char *names, size_t next,
                                   const std::vector<std::string *> &fields) {
  if (f.size() != fields.size() + 2)
    return fail(std::string(keyword) + ": expected " + std::to_string(fields.size() + 1) +
                " fields (" + names + "), got " + std::to_string(f.size() - 1));
  uint64_t id = 0;
  if (!parseUnsigned(f[1], id) || id != next)
    return fail(std::string(keyword) + " id: " + quote(f[1]) + " is not the next " + keyword +
                " id (" + std::to_string(next) + ")");
  for (size_t i = 0; i < fields.size(); ++i) {
    if (f[i + 2] == "-")
      continue;
    std::string problem;
    if (!percentDecode(f[i + 2], *fields[i], problem))
      return fail(std::string(keyword) + " field: " + quote(f[i + 2]) + ": " + problem);
  }
  return Status::success();
}

// span <id> <name> <node> <function>.
Status Parser::parseSpan(const std::vector<std::string_view> &f) {
  Manifest::ProfileSpan span;
  if (Status s = parseNumberedRecord(f, "span", "id, name, node, function", m.spans.size(),
                                     {&span.name, &span.node, &span.function});
      !s)
    return s;
  m.spans.push_back(std::move(span));
  return Status::success();
}

// site <id> <op> <node> <phase> <operands>: operands are earlier sites.
Status Parser::parseSite(const std::vector<std::string_view> &f) {
  Manifest::AnomalySite site;
  std::string operands;
  const uint64_t id = m.anomalySites.size();
  if (Status s = parseNumberedRecord(f, "site", "id, op, node, phase, operands", id,
                                     {&site.op, &site.node, &site.phase, &operands});
      !s)
    return s;
  if (!isAnomalyPhase(site.phase))
    return fail("site phase: " + quote(f[4]) + " is not input, parameter, forward, backward "
                "or optimizer");
  for (std::string_view rest = operands; !rest.empty();) {
    size_t comma = rest.find(',');
    std::string_view field = rest.substr(0, comma);
    uint64_t operand = 0;
    if (!parseUnsigned(field, operand) || operand >= id)
      return fail("site operands: " + quote(field) + " is not an earlier site's id (site " +
                  std::to_string(id) + ")");
    site.operands.push_back(uint32_t(operand));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (comma != std::string_view::npos && rest.empty())
      return fail("site operands: " + quote(f[5]) + " ends with a comma");
  }
  m.anomalySites.push_back(std::move(site));
  siteLine = siteLine ? siteLine : line;
  return Status::success();
}

Status Parser::finish() {
  if (!sawHeader)
    return fail("expected 'trc-artifact 1' as the first record, the manifest "
                "has only comments");
  if (!sawEnd)
    return fail("missing 'end' record (the manifest is truncated)");
  for (const char *record : {"target", "program", "entry", "arena", "weights"})
    if (!seen.count(record))
      return fail(std::string("missing '") + record + "' record");

  // Kernel records: only for target cuda, files and table together, file
  // names distinct, the table numbered without gaps.
  if (m.target != "cuda" && (!m.kernelFiles.empty() || !kernelLines.empty())) {
    line = !m.kernelFiles.empty() ? m.kernelFiles.front().line
                                  : kernelLines.begin()->second.first;
    return fail(std::string(!m.kernelFiles.empty() ? (m.kernelFiles.front().ptx ? "ptx" : "cubin")
                                                   : "kernel") +
                ": kernel records belong to target cuda, not " + m.target);
  }
  if (!kernelLines.empty() && m.kernelFiles.empty()) {
    line = kernelLines.begin()->second.first;
    return fail("kernel: the manifest has kernels but no cubin or ptx record to load "
                "them from");
  }
  if (kernelLines.empty() && !m.kernelFiles.empty()) {
    line = m.kernelFiles.front().line;
    return fail(std::string(m.kernelFiles.front().ptx ? "ptx" : "cubin") +
                ": kernel files but no kernel records (an artifact without kernels "
                "has neither)");
  }
  std::map<std::string, int> fileLines{{m.programFile, 0}, {m.weightsFile, 0}};
  for (const KernelFile &k : m.kernelFiles) {
    auto [it, inserted] = fileLines.emplace(k.file, k.line);
    if (!inserted) {
      line = k.line;
      return fail(std::string(k.ptx ? "ptx" : "cubin") + " file: " + k.file +
                  " is already " +
                  (it->second ? "named at line " + std::to_string(it->second)
                              : std::string("the program or weights file")));
    }
  }
  for (const auto &[index, where] : kernelLines) {
    if (index != int64_t(m.kernels.size())) {
      line = where.first;
      return fail("kernel index: no kernel " + std::to_string(m.kernels.size()) +
                  " (kernels must be numbered 0.." + std::to_string(kernelLines.size() - 1) +
                  " without gaps)");
    }
    m.kernels.push_back(where.second);
  }

  std::sort(m.slots.begin(), m.slots.end(),
            [](const Slot &a, const Slot &b) { return a.index < b.index; });
  for (size_t i = 0; i < m.slots.size(); ++i)
    if (m.slots[i].index != int64_t(i))
      return fail("slot index: no slot " + std::to_string(i) +
                  " (slots must be numbered 0.." +
                  std::to_string(m.slots.size() - 1) + " without gaps)");
  // Sites and the output of their codes come together.
  const Slot *codes = m.find(SlotKind::Output, abi::kAnomalyOutput);
  const std::vector<int64_t> expected{int64_t(m.anomalySites.size())};
  if (codes && (m.anomalySites.empty() || codes->dtype != DType::F32 || codes->shape != expected)) {
    line = codes->line;
    return fail("slot: output '" + std::string(abi::kAnomalyOutput) + "' must be f32 [" +
                std::to_string(m.anomalySites.size()) + "], one code per site record");
  }
  if (!codes && !m.anomalySites.empty()) {
    line = siteLine;
    return fail("site: site records without the output '" + std::string(abi::kAnomalyOutput) +
                "' that holds their codes");
  }

  for (const Slot &slot : m.slots) {
    if (slot.isSplit()) {
      std::vector<int64_t> part = splitPartShape(slot.splitShape, slot.split);
      if (slot.localShape() != part) {
        line = slot.splitLine;
        return fail("split: slot " + std::to_string(slot.index) + " " +
                    formatShape(slot.localShape()) +
                    (slot.shardDegree ? " (its shard record's full shape)" : "") +
                    " is not one of " + std::to_string(slot.split.degree) + " parts of " +
                    formatShape(slot.splitShape) + " split on dim " +
                    std::to_string(slot.split.dim) + " (expected " + formatShape(part) + ")");
      }
    }
    if (slot.kind != SlotKind::Param)
      continue;
    if (slot.initialized && !slot.initLine) {
      line = slot.line;
      return fail("slot offset: param '" + percentEncode(slot.name) +
                  "' has offset '-' but no init record");
    }
    if (slot.offset > m.weightsBytes ||
        slot.weightBytes() > m.weightsBytes - slot.offset) {
      line = slot.line;
      return fail("slot offset: param '" + percentEncode(slot.name) + "' (" +
                  std::to_string(slot.weightBytes()) + " bytes at offset " +
                  std::to_string(slot.offset) + ") lies past the end of " +
                  m.weightsFile + " (" + std::to_string(m.weightsBytes) +
                  " bytes)");
    }
  }
  return Status::success();
}

} // namespace

StatusOr<Manifest> parseManifest(std::string_view text) {
  Manifest out;
  Parser parser(out);
  if (Status s = parser.parse(text); !s)
    return s;
  return out;
}

} // namespace trc::rt
