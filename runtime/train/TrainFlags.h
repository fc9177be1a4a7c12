//===- TrainFlags.h - trc-run's training flags to TrainerOptions -*- C++ -*-===//
//
// Training is a front end over the Trainer library (Trainer.h): the flags
// a command line gave (TrainArgs, collected by RunCommand.h: trc-run's and
// the Python package's `trc.Trainer`) become TrainerOptions here, with
// errors that name the flag and its bad value ("option '--lr' expects a
// positive number"). Checks that involve several
// options are the library's (validateTrainerOptions).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_TRAINFLAGS_H
#define TRC_RUNTIME_TRAIN_TRAINFLAGS_H

#include "runtime/support/Status.h"
#include "runtime/train/Trainer.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace trc::rt {

/// The training flags as given on the command line (which flags exist,
/// and whether they take a value, is runtime/train/RunFlags.h's table).
struct TrainArgs {
  std::string model, device = "auto";
  std::map<std::string, std::string> values;              // --flag value
  std::map<std::string, std::vector<std::string>> lists;  // repeatable: --feed, --freeze
  std::set<std::string> switches;                         // --shuffle, --resume, ...

  // Every question goes through these, and each records the flag it asked
  // about in `read`: TrainFlagsTest checks that the reader asks about
  // exactly the table's training flags, so a flag renamed or added on one
  // side only fails a test instead of being ignored.
  bool on(const std::string &flag) const;
  bool given(const std::string &flag) const; // a value was given
  const std::string &value(const std::string &flag) const; // precondition: given
  const std::vector<std::string> &list(const std::string &flag) const;
  mutable std::set<std::string> read;
};

/// The Trainer's options from the flags; an error names the flag.
StatusOr<TrainerOptions> trainerOptionsFromFlags(const TrainArgs &args);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_TRAINFLAGS_H
