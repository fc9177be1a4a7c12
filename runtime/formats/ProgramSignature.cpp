//===- ProgramSignature.cpp - what a program was compiled for -------------===//
//
// The signature's records are spelled as the manifest spells them
// (docs/ARTIFACT.md), less the fields a program does not depend on.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/ProgramSignature.h"

#include "runtime/support/Names.h"

#include <cstring>
#include <string_view>

namespace trc::rt {

namespace {

void appendShape(std::string &out, const std::vector<int64_t> &shape) {
  out += " " + std::to_string(shape.size());
  for (int64_t d : shape)
    out += " " + std::to_string(d);
}

// Line `index` of `text` ("" past its end) and whether there is one.
bool lineAt(std::string_view text, size_t index, std::string_view &line) {
  size_t start = 0;
  for (size_t i = 0; i < index; ++i) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      return false;
    start = end + 1;
  }
  if (start >= text.size())
    return false;
  size_t end = text.find('\n', start);
  line = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
  return true;
}

} // namespace

std::string programSignature(const Manifest &m) {
  std::string out = std::string(kSignatureHeader) + "\n";
  out += "target " + m.target + "\n";
  out += "entry " + percentEncode(m.entry) + "\n";
  out += "arena " + std::to_string(m.arenaBytes) + "\n";
  if (m.hostArenaBytes > 0)
    out += "host_arena " + std::to_string(m.hostArenaBytes) + "\n";
  for (size_t i = 0; i < m.kernels.size(); ++i)
    out += "kernel " + std::to_string(i) + " " + percentEncode(m.kernels[i]) + "\n";
  for (const Slot &slot : m.slots) {
    std::string index = std::to_string(slot.index);
    out += "slot " + index + " " + slotKindName(slot.kind) + " " + percentEncode(slot.name) +
           " " + dtypeName(slot.dtype);
    appendShape(out, slot.shape);
    out += "\n";
    if (slot.indexBound)
      out += "bound " + index + " " + std::to_string(slot.indexBound) + "\n";
    if (slot.labelClasses) {
      out += "labels " + index + " " + std::to_string(slot.labelClasses);
      if (slot.labelIgnore)
        out += " " + std::to_string(*slot.labelIgnore);
      out += "\n";
    }
    if (slot.isSplit()) {
      out += "split " + index + " " + std::to_string(slot.split.dim) + " " +
             std::to_string(slot.split.blocks) + " " + std::to_string(slot.split.degree);
      appendShape(out, slot.splitShape);
      out += slot.split.mirrored ? " mirrored\n" : "\n";
    }
    if (slot.shardDegree) {
      out += "shard " + index + " " + std::to_string(slot.shardDegree);
      appendShape(out, slot.fullShape);
      out += "\n";
    }
  }
  return out;
}

Status checkProgramSignature(const Manifest &manifest, const char *programText,
                             const std::string &programPath) {
  if (!programText)
    return Status::error(programPath +
                         ": the program has no signature (trc_signature): it was not compiled "
                         "by this trc's compiler; compile the model again");
  std::string_view program(programText, ::strnlen(programText, kMaxSignatureBytes));
  std::string expected = programSignature(manifest);
  if (program == expected)
    return Status::success();
  for (size_t i = 0;; ++i) {
    std::string_view has, wants;
    bool inProgram = lineAt(program, i, has);
    bool inManifest = lineAt(expected, i, wants);
    if (inProgram && inManifest && has == wants)
      continue;
    if (!inProgram && !inManifest) // equal lines, other line ends
      return Status::error(programPath + ": the program's signature is not spelled as trc spells "
                                         "it (line ends); compile the model again");
    auto quoted = [](bool present, std::string_view line) {
      return present ? "'" + std::string(line) + "'" : std::string("nothing more");
    };
    return Status::error(programPath +
                         ": the program was compiled for another manifest (another model's "
                         "program, or an edited manifest.trc): the program has " +
                         quoted(inProgram, has) + " where the manifest has " +
                         quoted(inManifest, wants));
  }
}

} // namespace trc::rt
