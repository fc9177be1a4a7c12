//===- Predictions.cpp - the model's outputs for the eval rows ------------===//
//
// See Predictions.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/Predictions.h"

#include "runtime/formats/FileOps.h"
#include "runtime/formats/Json.h"
#include "runtime/formats/Npy.h"
#include "runtime/support/Names.h"

#include <filesystem>

namespace trc::rt {

Status checkPredictionsTarget(const std::string &dir) {
  return checkOwnedFolder("--predictions", dir, kPredictionsRecord);
}

Status writePredictions(const std::string &dir, int64_t step,
                        const std::vector<NamedTensor> &outputs) {
  if (outputs.empty())
    return Status::error("--predictions " + dir + ": the model has no output with one value "
                         "per row (only a mean loss) to write");
  if (Status s = checkPredictionsTarget(dir); !s)
    return s;
  StatusOr<std::string> staged = stageFolder(dir);
  if (!staged.ok())
    return Status(staged.status()).withPrefix("--predictions " + dir + ": ");
  std::string record = "{\"format\": \"trc-predictions 1\", \"step\": ";
  appendJsonInt(record, step);
  record += ", \"rows\": ";
  appendJsonInt(record, outputs.front().tensor.shape.front());
  record += ", \"outputs\": {";
  Status status = Status::success();
  for (size_t i = 0; i < outputs.size() && status; ++i) {
    std::string file = outputFileName(outputs[i].name);
    status = writeNpyFile(*staged + "/" + file, outputs[i].tensor);
    record += i ? ", " : "";
    appendJsonString(record, outputs[i].name);
    record += ": ";
    appendJsonString(record, file);
  }
  record += "}}\n";
  if (status)
    status = writeFileAtomic(*staged + "/" + kPredictionsRecord, record, systemFileSystem());
  if (status)
    status = replaceFolder(*staged, dir);
  if (!status) {
    std::error_code ec;
    std::filesystem::remove_all(*staged, ec);
    return status.withPrefix("--predictions " + dir + ": ");
  }
  return Status::success();
}

} // namespace trc::rt
