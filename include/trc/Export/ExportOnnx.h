//===- ExportOnnx.h - trc-run --export-onnx: trained weights into ONNX -*- C++ -*-===//
//
// Built only with the compiler (it reads and writes ONNX protobufs). After
// training, writes OUT.onnx: a copy of the source model (graph, opsets,
// metadata unchanged) whose initializers hold the trained weights, so that
// onnxruntime or any other ONNX consumer runs the trained model.
//
//   * Each trained parameter's initializer (trc names parameters after their
//     initializers) gets the trained value as raw_data; its dtype and shape
//     must be the initializer's, else it is an error naming both.
//   * An initializer the importer tied to a parameter (an exporter's folded
//     copy such as onnx::MatMul_N = transpose(wte.weight); findTiedInitializers
//     in trc/Import/OnnxImporter.h) is written as the same function of the
//     trained parameter, so the exported model stays consistent.
//   * Every other initializer (frozen parameters, integer constants, ones the
//     graph does not use) keeps its value. Data the source keeps in external
//     files is read (locations confined to the model's folder, as in the
//     importer) and written inline, so OUT does not depend on the source's
//     folder.
//   * OUT is written atomically (temp file, fsync, rename): a failure leaves
//     no partial file and an earlier OUT untouched. A model whose serialized
//     form would pass protobuf's 2 GiB limit keeps its large initializers
//     (>= 1 KiB) in OUT.data beside OUT (ONNX external data), written the same
//     way before OUT is renamed into place.
//
// Preconditions: `sourceModel` is the .onnx file the trained artifact was
// imported from, unchanged since; the host is little-endian (ONNX raw_data is).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_EXPORT_EXPORTONNX_H
#define TRC_EXPORT_EXPORTONNX_H

#include "runtime/artifact/Session.h"
#include "runtime/support/Status.h"
#include "runtime/support/Tensor.h"
#include "runtime/train/StepCompiler.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace trc {

/// The weights to export: the trained parameters by (decoded) name, and how
/// to read one.
using rt::TrainedWeights;

struct ExportOnnxOptions {
  /// The largest .onnx written as one file (protobuf cannot serialize more
  /// than 2 GiB); above it, initializers of at least `externalMinBytes` go to
  /// OUT.data.
  uint64_t maxInlineBytes = (uint64_t(1) << 31) - 1;
  uint64_t externalMinBytes = 1024;
};

/// Checks, before a training run, that OUT can be written: `outPath` is not
/// empty, not a folder, not the source model, and its folder exists and is
/// writable; and that `sourceModel` is an .onnx file, not a compiled artifact
/// (a folder or an .trc bundle has no ONNX graph to copy).
rt::Status checkExportTarget(const std::string &sourceModel, const std::string &outPath);

/// The model's metadata_props, key -> value (the last of a repeated key).
rt::StatusOr<std::map<std::string, std::string>> readModelMetadata(const std::string &model);

/// Writes `outPath` from `sourceModel` with `weights` (see above).
rt::Status exportTrainedOnnx(const std::string &sourceModel, const std::string &outPath,
                             const TrainedWeights &weights,
                             const ExportOnnxOptions &options = {});

/// The same with the trainable parameters of a training session (frozen ones
/// keep the source's values).
rt::Status exportTrainedOnnx(const std::string &sourceModel, const std::string &outPath,
                             const rt::Session &session);

} // namespace trc

#endif
