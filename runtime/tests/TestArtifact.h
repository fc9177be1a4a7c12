//===- TestArtifact.h - temporary folders and the test artifact -------------===//
//
// Helpers of the runtime tests: a TempDir removed at scope exit, whole-file
// read/write, and writeTestArtifact(), which writes a real artifact folder
// (manifest.trc, weights.bin, program.so copied from the TestProgram.c
// fixture) with correct sizes and hashes. Tests then corrupt what they test.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_TESTARTIFACT_H
#define TRC_RUNTIME_TESTS_TESTARTIFACT_H

#include "TestFixtures.h"
#include "runtime/formats/Checksum.h"
#include "runtime/formats/Manifest.h"
#include "runtime/formats/ProgramSignature.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trc::rt::test {

class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string pattern =
        std::string(base && *base ? base : "/tmp") + "/trc-rt-test-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()))
      path_ = buf.data();
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty())
      std::filesystem::remove_all(path_, ec);
  }
  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
}

// Parameter values of the test artifact (W is [3, 2], b is [2]).
inline const float kW[6] = {1, 2, 3, 4, 5, 6};
inline const float kB[2] = {0.5f, -1};

// weights.bin: W at offset 0, b at offset 64, 128 bytes in all.
inline std::string testWeights() {
  std::string w(128, '\0');
  std::memcpy(&w[0], kW, sizeof(kW));
  std::memcpy(&w[64], kB, sizeof(kB));
  return w;
}

// A manifest's checksum of `bytes`: xxh3:<hex> as trc writes it, or (kind
// Fnv1a64) 16 bare hex digits as manifests written before XXH3 spell it.
inline std::string manifestChecksum(const std::string &bytes,
                                    ChecksumKind kind = ChecksumKind::Xxh3) {
  Checksum c = checksumOf(kind, bytes.data(), bytes.size());
  return kind == ChecksumKind::Xxh3 ? formatChecksum(c) : toHex16(c.value);
}

struct ArtifactOptions {
  std::string target = "cpu";
  std::string entry = "trc_entry";
  std::string program = fixturePath(TRC_TEST_PROGRAM);
  ChecksumKind checksums = ChecksumKind::Xxh3;
};

// The manifest of the test artifact for the given program and weights bytes.
inline std::string testManifest(const std::string &program,
                                const std::string &weights,
                                const ArtifactOptions &opt = {}) {
  std::string m;
  m += "trc-artifact 1\n";
  m += "# written by the runtime tests\n";
  m += "target " + opt.target + "\n";
  m += "program program.so " + std::to_string(program.size()) + " " +
       manifestChecksum(program, opt.checksums) + "\n";
  m += "entry " + opt.entry + "\n";
  m += "arena 64\n";
  m += "weights weights.bin " + std::to_string(weights.size()) + " " +
       manifestChecksum(weights, opt.checksums) + "\n";
  m += "slot 0 input x f32 2 4 3\n";
  m += "slot 1 param W f32 2 3 2 0 trainable\n";
  m += "slot 2 output y f32 2 4 2\n";
  m += "slot 3 param b f32 1 2 64 frozen\n";
  m += "slot 4 output out/sum f32 2 4 3\n";
  m += "slot 5 input in/two f32 2 4 3\n";
  m += "end\n";
  return m;
}

// Writes the artifact into `dir` (which must exist).
inline void writeTestArtifact(const std::string &dir,
                              const ArtifactOptions &opt = {}) {
  std::string program = readFile(opt.program);
  std::string weights = testWeights();
  writeFile(dir + "/program.so", program);
  writeFile(dir + "/weights.bin", weights);
  writeFile(dir + "/manifest.trc", testManifest(program, weights, opt));
}

// Replaces `dir`'s program.so by `source` (TestProgram.c, or another
// fixture that declares its signature under #ifndef
// TRC_TEST_SIGNATURE_ELSEWHERE) compiled now, with the C compiler that built
// the fixtures, with the signature of `dir`'s manifest,
// and the manifest's program record by the new file's size and checksum:
// a program compiled for that manifest (ProgramSignature.h). Its code is
// the fixture's, right for that file's own slots only. False (with
// `error`) when the manifest does not parse or the compiler fails.
inline bool compileTestProgramFor(const std::string &dir, std::string &error,
                                  const std::string &source = TRC_TEST_PROGRAM_SOURCE) {
  std::string manifest = readFile(dir + "/manifest.trc");
  StatusOr<Manifest> parsed = parseManifest(manifest);
  if (!parsed.ok()) {
    error = std::string(parsed.status().message());
    return false;
  }
  std::string literal;
  for (char c : programSignature(*parsed))
    literal += c == '\n' ? std::string("\\n") : c == '"' || c == '\\' ? std::string("\\") + c
                                                                      : std::string(1, c);
  writeFile(dir + "/signature.c", "const char trc_signature[] = \"" + literal + "\";\n");
  std::string command = std::string(TRC_TEST_CC) + " -shared -fPIC -O1 -DTRC_TEST_SIGNATURE_ELSEWHERE '" +
                        source + "' '" + dir + "/signature.c' -o '" + dir +
                        "/program.so'";
  int rc = std::system(command.c_str());
  std::filesystem::remove(dir + "/signature.c");
  if (rc != 0) {
    error = "failed: " + command;
    return false;
  }
  std::string program = readFile(dir + "/program.so");
  size_t at = manifest.find("\nprogram ");
  size_t end = manifest.find('\n', at + 1);
  manifest.replace(at + 1, end - at - 1,
                   "program program.so " + std::to_string(program.size()) + " " +
                       manifestChecksum(program));
  writeFile(dir + "/manifest.trc", manifest);
  return true;
}

// The test artifact with W's slot line replaced by `records` (a sharded,
// split or initialized W) and its program compiled for that manifest. The
// program computes y = x * W + b for W [3, 2] only: tests of other W
// layouts load the artifact and its parameters but do not run it.
inline bool writeTestArtifactWithW(const std::string &dir, const std::string &records,
                                   std::string &error) {
  writeTestArtifact(dir);
  std::string manifest = readFile(dir + "/manifest.trc");
  std::string from = "slot 1 param W f32 2 3 2 0 trainable\n";
  size_t at = manifest.find(from);
  if (at == std::string::npos) {
    error = "the test manifest has no W slot";
    return false;
  }
  manifest.replace(at, from.size(), records);
  writeFile(dir + "/manifest.trc", manifest);
  return compileTestProgramFor(dir, error);
}

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_TESTARTIFACT_H
