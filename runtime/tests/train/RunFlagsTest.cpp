//===- RunFlagsTest.cpp - trc-run's one table of flags ---------------------===//
//
// The table is well formed (unique names, a value name exactly where a
// value is taken), trc-run --help, made from it, lists every flag once
// within 80 columns, and the training flags' reader (TrainFlags.cpp) asks
// about every training flag of the table and about no flag it lacks.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/RunFlags.h"
#include "runtime/train/TrainFlags.h"

#include <gtest/gtest.h>
#include <set>
#include <sstream>

using namespace trc::rt;

TEST(RunFlagsTest, TheTableIsWellFormed) {
  std::set<std::string_view> names;
  for (const RunFlag &f : runFlags()) {
    EXPECT_EQ(f.name.substr(0, 2), "--") << f.name;
    EXPECT_TRUE(names.insert(f.name).second) << f.name << " twice";
    EXPECT_EQ(f.valueName.empty(), f.arity == FlagArity::Switch) << f.name;
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_EQ(findRunFlag(f.name), &f);
  }
  EXPECT_EQ(findRunFlag("--bogus"), nullptr);
  EXPECT_EQ(findRunFlag("--steps=5"), nullptr); // names only; the parser splits "="
  ASSERT_NE(findRunFlag("--steps"), nullptr);
  EXPECT_EQ(findRunFlag("--steps")->arity, FlagArity::Value);
  EXPECT_EQ(findRunFlag("--steps")->mode, RunMode::Training);
  EXPECT_EQ(findRunFlag("--resume")->arity, FlagArity::SwitchOrAuto);
  EXPECT_FALSE(findRunFlag("--export-onnx")->selectsMode);
}

TEST(RunFlagsTest, TheUsageListsEveryFlagOnceWithin80Columns) {
  std::string usage = runUsage();
  std::istringstream lines(usage);
  std::multiset<std::string> listed;
  for (std::string line; std::getline(lines, line);) {
    EXPECT_LE(line.size(), 80u) << line;
    if (line.rfind("  --", 0) == 0)
      listed.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  for (const RunFlag &f : runFlags())
    EXPECT_EQ(listed.count(std::string(f.name)), 1u) << f.name;
  EXPECT_EQ(listed.size(), runFlags().size());
  EXPECT_EQ(usage.rfind("usage: trc-run ARTIFACT_DIR", 0), 0u);
}

TEST(RunFlagsTest, TheTrainingFlagReaderAsksAboutExactlyTheTablesTrainingFlags) {
  TrainArgs args; // nothing given: the reader still asks about every flag it knows
  ASSERT_TRUE(trainerOptionsFromFlags(args).ok());
  std::set<std::string> training, shared; // shared: also training's (--profile-summary)
  for (const RunFlag &f : runFlags()) {
    if (f.mode == RunMode::Training)
      training.insert(std::string(f.name));
    if (f.mode == RunMode::Shared)
      shared.insert(std::string(f.name));
  }
  for (const std::string &flag : args.read)
    EXPECT_TRUE(training.count(flag) || shared.count(flag))
        << flag << " is read but not a training flag of the table";
  for (const std::string &flag : training)
    EXPECT_TRUE(args.read.count(flag)) << flag << " is in the table but never read";
}
