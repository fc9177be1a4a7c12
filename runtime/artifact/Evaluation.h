//===- Evaluation.h - run an artifact once on inputs from .npy files -*- C++ -*-===//
//
// trc-run's evaluation mode as a library: load the artifact at `artifactDir`
// for `backend`, bind every input from a NumPy .npy file (dtype and shape
// must match exactly), run the program once (then `repeat` more times,
// timed, the mean and best printed to stderr), and write
// outputDir/<output>.npy for every output ('/' and '%' in a name are
// percent-encoded; bf16 outputs are widened to f32, which NumPy has).
// All-or-nothing: the outputs are written to temporary files and renamed
// into place (then the folder fsynced) only when every one was written;
// on any error nothing is left behind.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_ARTIFACT_EVALUATION_H
#define TRC_RUNTIME_ARTIFACT_EVALUATION_H

#include "runtime/backends/Backend.h"
#include "runtime/support/Profiler.h"
#include "runtime/support/Status.h"

#include <string>
#include <utility>
#include <vector>

namespace trc::rt {

struct EvaluationOptions {
  std::vector<std::pair<std::string, std::string>> inputs; // input name, .npy file
  std::string outputDir;                                   // created if needed
  int repeat = 0;                                          // timed runs after the first
  // When set, the timed runs are profiled (each one a profile::kStep span,
  // with its program's per-op spans) and the spans moved here.
  std::vector<Span> *profileSpans = nullptr;
};

Status evaluateArtifact(const std::string &artifactDir, Backend &backend,
                        const EvaluationOptions &options);

} // namespace trc::rt

#endif // TRC_RUNTIME_ARTIFACT_EVALUATION_H
