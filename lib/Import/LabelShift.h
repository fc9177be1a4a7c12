//===- LabelShift.h - does a model shift an input along its sequence? -*- C++ -*-===//
//
// A causal language model exported with its own loss (Hugging Face's
// `model(input_ids, labels=labels).loss`) takes labels equal to its input
// ids and shifts them itself: the graph slices labels[:, 1:] (after, in
// transformers 5, padding them with -100 at the end). Such a model must be
// fed the token window itself as labels, not the next tokens (it would
// learn the token after next). This finds that slice.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_IMPORT_LABELSHIFT_H
#define TRC_LIB_IMPORT_LABELSHIFT_H

#include "OnnxProto.h"

#include <string>

namespace trc::import {

/// The name of the Slice node that takes graph input `input` (possibly
/// through Cast, Identity or Pad) from position 1 along axis 1 (the
/// sequence of a [batch, sequence] input), or "" when there is none.
std::string findSequenceShift(const onnx::GraphProto &graph, const std::string &input);

} // namespace trc::import

#endif
