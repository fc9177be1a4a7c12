//===- TokenWindows.h - an eval text as rows of token windows ---*- C++ -*-===//
//
// `--eval-data` given token data (a text or llm.c token file, as `--data`):
// the file is cut into its W = floor((N-1)/T) consecutive windows of T+1
// tokens at offsets 0, T, 2T, ... (the windows a run without shuffle
// trains on, each token predicted once), as rows: `inputs` [W, T] the
// window's first T tokens, `targets` [W, T] the next tokens (or, for a
// model that shifts its labels itself, the window's inputs again). Token
// ids must be below `vocab` (the DataLoader checks, naming the offset).
// Messages start with the file's path.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_TRAIN_TOKENWINDOWS_H
#define TRC_RUNTIME_TRAIN_TOKENWINDOWS_H

#include "runtime/train/RowData.h"

#include <memory>
#include <string>

namespace trc::rt {

struct TokenWindowOptions {
  std::string path;
  int64_t seqLen = 0;            // T
  int64_t vocab = 0;             // ids must be below it (0: the format's range)
  std::string inputs, targets;   // the model's token and target inputs
  bool targetsAreWindow = false; // the model shifts its labels itself
};

StatusOr<std::unique_ptr<RowDataset>> readTokenWindows(const TokenWindowOptions &options);

} // namespace trc::rt

#endif // TRC_RUNTIME_TRAIN_TOKENWINDOWS_H
