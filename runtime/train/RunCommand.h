//===- RunCommand.h - a trc-run command line, read ---------------*- C++ -*-===//
//
// trc-run's arguments (the model and its flags; RunFlags.h's table says
// which flags exist and how they take values) read into a RunCommand: which
// mode it asks for (help, calibration, training, evaluation) and that mode's
// settings, the training flags kept as given (TrainFlags.h turns them into
// TrainerOptions). trc-run and the Python package (python/, `trc.Trainer`
// builds these arguments from keyword arguments) read their arguments here,
// so both accept the same flags with the same errors.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_RUNCOMMAND_H
#define TRC_RUNTIME_TRAIN_RUNCOMMAND_H

#include "runtime/support/Status.h"
#include "runtime/train/TrainFlags.h"

#include <string>
#include <utility>
#include <vector>

namespace trc::rt {

struct RunCommand {
  std::string model;
  std::string device = "auto";
  std::vector<std::pair<std::string, std::string>> inputs; // --input NAME=FILE
  std::string outputDir;       // --output-dir
  int repeat = 0;              // --repeat N: time N more runs after the first
  bool help = false;           // --help, -h
  bool training = false;       // a flag that selects training was given
  bool calibrate = false;      // --calibrate
  std::string calibrateOut;    // --calibrate-out
  TrainArgs train;             // training flags, as given
};

/// Reads `args` (the command line without the program's name); the first
/// problem is an error naming the flag or argument. After --help nothing
/// more is read.
Status parseRunCommand(const std::vector<std::string> &args, RunCommand &command);

/// The Trainer's options from `command`'s training flags (its model and
/// device included); an error names the flag.
StatusOr<TrainerOptions> trainerOptions(const RunCommand &command);

/// The paths the flags name, checked before anything is read or written:
/// a file to read must be a regular file (a folder where one is allowed),
/// never a FIFO or a device that would block or misbehave; an output must
/// not be an input (the memory-mapped data truncated under the run, the
/// model overwritten).
Status checkRunPaths(const RunCommand &command);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_RUNCOMMAND_H
