//===- TestFixtures.h - where the tests' fixture programs lie ---------------===//
//
// The fixture programs (TestProgram.c, TestCudaProgram.c, ...) are built
// beside the tests and their paths compiled in. A bundle that moves the tests
// to another machine (scripts/gpu-bundle.sh) carries the fixtures in one
// folder and names it in TRC_TEST_FIXTURES; each fixture is then that folder
// plus the fixture's file name.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TESTS_TESTFIXTURES_H
#define TRC_RUNTIME_TESTS_TESTFIXTURES_H

#include <cstdlib>
#include <string>

namespace trc::rt::test {

inline std::string fixturePath(const char *builtPath) {
  const char *moved = std::getenv("TRC_TEST_FIXTURES");
  std::string path = builtPath;
  if (!moved || !*moved)
    return path;
  std::string::size_type slash = path.rfind('/');
  return std::string(moved) + "/" + (slash == std::string::npos ? path : path.substr(slash + 1));
}

} // namespace trc::rt::test

#endif // TRC_RUNTIME_TESTS_TESTFIXTURES_H
