//===- RunFlags.h - trc-run's flags, declared once --------------*- C++ -*-===//
//
// Every flag trc-run takes, in one table: its name, its value's name (none
// for a switch), the mode it belongs to and its help. trc-run's parser, its
// --help text and trc-launch's reading of a job's command line all come from
// this table, so they cannot disagree (a flag the parser takes is in the
// usage; a valued flag is never mistaken for a switch by the launcher).
// What the values mean is checked where they are used (TrainFlags.cpp for
// the training flags, the Trainer library for combinations).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_RUNFLAGS_H
#define TRC_RUNTIME_TRAIN_RUNFLAGS_H

#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

/// The mode a flag belongs to. A training flag makes the run a training run
/// unless `selectsMode` is false (--export-onnx only qualifies one); a
/// shared flag belongs to several modes and selects none.
enum class RunMode { Evaluation, Training, Calibration, Shared };

enum class FlagArity {
  Switch,       // --shuffle
  Value,        // --steps N or --steps=N
  SwitchOrAuto, // --resume, or --resume auto (--resume=auto)
};

struct RunFlag {
  std::string_view name;      // "--batch-size"
  std::string_view valueName; // "B" in the usage; empty for a switch
  FlagArity arity;
  RunMode mode;
  bool repeatable;            // may be given more than once (--feed, --input)
  bool selectsMode;           // giving it selects `mode` (see RunMode)
  std::string_view help;      // one paragraph, wrapped by runUsage
};

/// Every flag, in the order the usage lists them.
const std::vector<RunFlag> &runFlags();

/// The flag named `name` (without "=value"); null when trc-run has none.
const RunFlag *findRunFlag(std::string_view name);

/// trc-run --help: the modes' synopses and every flag with its help.
std::string runUsage();

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_RUNFLAGS_H
