//===- ExportOnnx.cpp - trc-run --export-onnx: trained weights into ONNX ----===//
#include "trc/Export/ExportOnnx.h"
#include "trc/Abi/ArtifactNames.h"

#include "runtime/support/Parse.h"

#include "trc/Import/OnnxDTypes.h"
#include "trc/Import/OnnxImporter.h"

#include "runtime/formats/Bundle.h"
#include "runtime/support/DType.h"
#include "runtime/formats/FileOps.h"
#include "runtime/support/InterruptCleanup.h"
#include "runtime/support/Names.h"

#include "onnx/onnx_pb.h"
#include <google/protobuf/io/coded_stream.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace trc {
namespace {
using rt::Status;
using Tensor = onnx::TensorProto;

// Bytes per element of fixed-width ONNX types in raw and external data; 0
// for strings and types not in the table (packed 4-bit types, unknown ones).
int64_t elementBytes(int type) {
  const import::OnnxDType *row = import::findOnnxDType(type);
  return row ? row->bytes() : 0;
}

// The dtype trc gives a parameter imported from a float initializer.
bool parameterDType(int type, rt::DType &out) {
  const import::OnnxDType *row = import::findOnnxDType(type);
  if (!row || row->kind != import::OnnxKind::Float || !row->dtype)
    return false;
  out = *row->dtype;
  return true;
}

std::string typeName(int type) { return import::onnxTypeName(type); }

std::vector<int64_t> dimsOf(const Tensor &t) { return {t.dims().begin(), t.dims().end()}; }

std::string quoted(const std::string &name) { return "'" + rt::percentEncode(name) + "'"; }

// Makes `bytes` the tensor's data, in place of whatever held it before.
void setRawData(Tensor &t, std::string bytes) {
  t.clear_float_data();
  t.clear_double_data();
  t.clear_int32_data();
  t.clear_int64_data();
  t.clear_uint64_data();
  t.clear_string_data();
  t.clear_external_data();
  t.set_data_location(Tensor::DEFAULT);
  *t.mutable_raw_data() = std::move(bytes);
}

std::string realPath(const std::string &path) {
  char buffer[PATH_MAX];
  return ::realpath(path.c_str(), buffer) ? std::string(buffer) : std::string();
}

/// Reads the source's external data, with the importer's rules: a location
/// is relative, has no "..", and resolves (through symlinks) inside the
/// model's folder; the file holds the declared range.
class ExternalData {
public:
  explicit ExternalData(const std::string &model)
      : model_(model), dir_(rt::parentDirectory(model)) {}

  Status inlineInto(Tensor &t, const std::string &what) {
    auto fail = [&](const std::string &message) {
      return Status::error(model_ + ": " + what + ": " + message);
    };
    std::string location;
    int64_t offset = 0, length = -1;
    for (const auto &entry : t.external_data()) {
      if (entry.key() == "location") {
        location = entry.value();
      } else if (entry.key() == "offset" || entry.key() == "length") {
        const std::string &v = entry.value();
        std::optional<int64_t> n = rt::parseInt64(v, 0);
        if (!n)
          return fail("external data " + entry.key() + " '" + v +
                      "' is not a non-negative integer");
        (entry.key() == "offset" ? offset : length) = *n;
      }
    }
    if (location.empty())
      return fail("external data has no location");
    if (location[0] == '/')
      return fail("external data location '" + location + "' is an absolute path");
    for (size_t start = 0; start <= location.size();) {
      size_t slash = location.find('/', start);
      if (slash == std::string::npos)
        slash = location.size();
      if (location.compare(start, slash - start, "..") == 0 && slash - start == 2)
        return fail("external data location '" + location + "' leaves the model's folder");
      start = slash + 1;
    }
    std::string file = dir_ + "/" + location;
    std::string resolved = realPath(file), root = realPath(dir_);
    if (resolved.empty())
      return fail("external data file '" + file + "' does not exist");
    if (root.empty() || resolved.compare(0, root.size() + 1, root + "/") != 0)
      return fail("external data location '" + location + "' resolves to '" + resolved +
                  "', outside the model's folder");
    int64_t width = elementBytes(t.data_type()), count = 0, expected = length;
    if (width) {
      if (!rt::elementCount(dimsOf(t), count))
        return fail("bad dimensions " + rt::formatShape(dimsOf(t)));
      expected = count * width;
      if (length >= 0 && length != expected)
        return fail("external data length " + std::to_string(length) + " is not the " +
                    std::to_string(expected) + " bytes its shape needs");
    } else if (length < 0) {
      return fail("external data of " + typeName(t.data_type()) + " declares no length");
    }
    auto &mapped = files_[resolved];
    if (!mapped) {
      mapped = std::make_unique<rt::MappedFile>();
      if (Status s = mapped->open(resolved); !s)
        return s;
    }
    int64_t size = static_cast<int64_t>(mapped->size());
    if (offset > size || size - offset < expected)
      return fail("external data file '" + file + "' is " + std::to_string(size) +
                  " bytes, shorter than the declared offset " + std::to_string(offset) +
                  " + length " + std::to_string(expected));
    setRawData(t, std::string(mapped->bytes().substr(size_t(offset), size_t(expected))));
    return Status::success();
  }

private:
  std::string model_, dir_;
  std::map<std::string, std::unique_ptr<rt::MappedFile>> files_;
};

// Calls `visit` on every tensor of `graph` held in the file: initializers,
// sparse initializers, tensor attributes, subgraphs.
Status forEachTensor(onnx::GraphProto &graph,
                     const std::function<Status(Tensor &, const std::string &)> &visit) {
  for (auto &t : *graph.mutable_initializer())
    if (Status s = visit(t, "initializer " + quoted(t.name())); !s)
      return s;
  for (auto &sparse : *graph.mutable_sparse_initializer()) {
    std::string what = "sparse initializer " + quoted(sparse.values().name());
    if (Status s = visit(*sparse.mutable_values(), what); !s)
      return s;
    if (Status s = visit(*sparse.mutable_indices(), what + " (indices)"); !s)
      return s;
  }
  for (auto &node : *graph.mutable_node())
    for (auto &attr : *node.mutable_attribute()) {
      std::string what = "attribute '" + attr.name() + "' of node " + quoted(node.name());
      if (attr.has_t())
        if (Status s = visit(*attr.mutable_t(), what); !s)
          return s;
      for (auto &t : *attr.mutable_tensors())
        if (Status s = visit(t, what); !s)
          return s;
      if (attr.has_g())
        if (Status s = forEachTensor(*attr.mutable_g(), visit); !s)
          return s;
      for (auto &g : *attr.mutable_graphs())
        if (Status s = forEachTensor(g, visit); !s)
          return s;
    }
  return Status::success();
}

Status loadModel(const std::string &path, onnx::ModelProto &model) {
  rt::MappedFile file;
  if (Status s = file.open(path); !s)
    return s;
  if (file.size() > static_cast<size_t>(INT_MAX))
    return Status::error(path + ": the file is larger than 2 GiB (protobuf's limit)");
  google::protobuf::io::CodedInputStream stream(file.data(), static_cast<int>(file.size()));
  stream.SetRecursionLimit(64);
  if (!model.ParseFromCodedStream(&stream) || !stream.ConsumedEntireMessage() ||
      !model.has_graph())
    return Status::error(path + ": not a valid ONNX model (was it changed during training?)");
  return Status::success();
}

} // namespace

rt::StatusOr<std::map<std::string, std::string>> readModelMetadata(const std::string &path) {
  onnx::ModelProto model;
  if (Status s = loadModel(path, model); !s)
    return s;
  std::map<std::string, std::string> metadata;
  for (const auto &prop : model.metadata_props())
    metadata[prop.key()] = prop.value();
  return metadata;
}

namespace {

// Puts `value` (a trained parameter) into initializer `t` after checking
// that it has the initializer's dtype and shape.
Status replaceWith(Tensor &t, const rt::HostTensor &value, const std::string &what) {
  rt::DType dtype;
  if (!parameterDType(t.data_type(), dtype) || dtype != value.dtype ||
      dimsOf(t) != value.shape)
    return Status::error(what + " is " + typeName(t.data_type()) + " " +
                         rt::formatShape(dimsOf(t)) + " in the model, but the trained value is " +
                         rt::formatType(value.dtype, value.shape));
  setRawData(t, std::string(static_cast<const char *>(value.data()), value.byteSize()));
  return Status::success();
}

// transpose(value) of a 2-D tensor, as bytes.
std::string transposedBytes(const rt::HostTensor &value) {
  int64_t rows = value.shape[0], cols = value.shape[1];
  size_t width = rt::dtypeSize(value.dtype);
  const char *src = static_cast<const char *>(value.data());
  std::string out(value.byteSize(), '\0');
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      std::memcpy(&out[size_t(c * rows + r) * width], &src[size_t(r * cols + c) * width], width);
  return out;
}

std::string baseName(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Writes `model` to `out` with its large initializers in `out`.data: both
/// files are written to temporaries and fsynced, then renamed (data first).
Status writeWithExternalData(onnx::ModelProto &model, const std::string &out,
                             const ExportOnnxOptions &options) {
  constexpr uint64_t kAlignment = 4096; // offsets stay page-aligned for mmap
  std::string dataPath = out + ".data", location = baseName(dataPath);
  std::vector<std::string> chunks;
  std::vector<uint64_t> offsets;
  uint64_t end = 0;
  for (auto &t : *model.mutable_graph()->mutable_initializer()) {
    if (!t.has_raw_data() || t.raw_data().size() < options.externalMinBytes)
      continue;
    uint64_t offset = (end + kAlignment - 1) / kAlignment * kAlignment;
    chunks.emplace_back();
    chunks.back().swap(*t.mutable_raw_data());
    offsets.push_back(offset);
    end = offset + chunks.back().size();
    t.clear_raw_data();
    t.set_data_location(Tensor::EXTERNAL);
    for (auto [key, value] : {std::pair<const char *, std::string>{"location", location},
                              {"offset", std::to_string(offset)},
                              {"length", std::to_string(chunks.back().size())}}) {
      auto *entry = t.add_external_data();
      entry->set_key(key);
      entry->set_value(value);
    }
  }
  if (model.ByteSizeLong() > options.maxInlineBytes)
    return Status::error(out + ": the model is over 2 GiB even with its initializers in " +
                         location + " (protobuf cannot write it)");
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return Status::error(out + ": the model does not serialize");

  std::string pid = std::to_string(::getpid());
  std::string dataTemp = dataPath + ".tmp-" + pid, modelTemp = out + ".tmp-" + pid;
  // A killed export's temporary files go now; an interrupted one's on the
  // signal (runtime/support/InterruptCleanup.h).
  rt::removeStaleStaging(dataPath, ".tmp-");
  rt::removeStaleStaging(out, ".tmp-");
  rt::InterruptCleanupGuard guardData(dataTemp), guardModel(modelTemp);
  rt::FileSystemHooks &fs = rt::systemFileSystem();
  {
    rt::FileWriter w; // removes its file unless finished
    if (Status s = w.open(dataTemp, fs); !s)
      return s;
    const std::string zeros(kAlignment, '\0');
    for (size_t i = 0; i < chunks.size(); ++i) {
      if (Status s = w.append(zeros.data(), size_t(offsets[i] - w.bytesWritten())); !s)
        return s;
      if (Status s = w.append(chunks[i]); !s)
        return s;
    }
    if (Status s = w.finish(); !s)
      return s;
  }
  {
    rt::FileWriter w;
    Status s = w.open(modelTemp, fs);
    if (s)
      s = w.append(bytes);
    if (s)
      s = w.finish();
    if (!s) {
      ::unlink(dataTemp.c_str());
      return s;
    }
  }
  if (fs.rename(dataTemp.c_str(), dataPath.c_str()) != 0) {
    int e = errno;
    ::unlink(dataTemp.c_str());
    ::unlink(modelTemp.c_str());
    return Status::error(dataPath + ": cannot rename " + dataTemp + ": " + std::strerror(e));
  }
  if (fs.rename(modelTemp.c_str(), out.c_str()) != 0) {
    int e = errno;
    ::unlink(modelTemp.c_str());
    ::unlink(dataPath.c_str());
    return Status::error(out + ": cannot rename " + modelTemp + ": " + std::strerror(e));
  }
  return rt::fsyncDirectory(rt::parentDirectory(out));
}

} // namespace

Status checkExportTarget(const std::string &sourceModel, const std::string &outPath) {
  if (outPath.empty())
    return Status::error("option '--export-onnx' needs a non-empty value");
  struct stat source, out, dir;
  bool haveSource = ::stat(sourceModel.c_str(), &source) == 0;
  if ((haveSource && S_ISDIR(source.st_mode)) || rt::isBundlePath(sourceModel))
    return Status::error(sourceModel + ": is " +
                         (rt::isBundlePath(sourceModel) ||
                                  ::access((sourceModel + "/" + trc::abi::kManifestFile).c_str(), F_OK) == 0
                              ? "a compiled artifact"
                              : "a folder") +
                         ", not an .onnx model; --export-onnx writes a copy of the .onnx "
                         "model with the trained weights, so train from the .onnx file");
  std::string folder = rt::parentDirectory(outPath);
  if (outPath.back() == '/')
    return Status::error(outPath + ": --export-onnx needs a file name, not a folder");
  if (::stat(folder.c_str(), &dir) != 0)
    return Status::error(outPath + ": cannot write: folder '" + folder +
                         "': " + std::strerror(errno));
  if (!S_ISDIR(dir.st_mode))
    return Status::error(outPath + ": cannot write: '" + folder + "' is not a folder");
  if (::access(folder.c_str(), W_OK | X_OK) != 0)
    return Status::error(outPath + ": cannot write into folder '" + folder +
                         "': " + std::strerror(errno));
  if (::stat(outPath.c_str(), &out) == 0) {
    if (S_ISDIR(out.st_mode))
      return Status::error(outPath + ": is a folder; --export-onnx needs a file name");
    if (haveSource && out.st_dev == source.st_dev && out.st_ino == source.st_ino)
      return Status::error(outPath + ": is the model being trained; export to another file");
  }
  return Status::success();
}

Status exportTrainedOnnx(const std::string &sourceModel, const std::string &outPath,
                         const TrainedWeights &weights, const ExportOnnxOptions &options) {
  onnx::ModelProto model;
  if (Status s = loadModel(sourceModel, model); !s)
    return s;
  // The source's external data comes along inline (read first: ties are
  // found by comparing initializers' bytes).
  ExternalData external(sourceModel);
  if (Status s = forEachTensor(*model.mutable_graph(),
                               [&](Tensor &t, const std::string &what) {
                                 return t.data_location() == Tensor::EXTERNAL
                                            ? external.inlineInto(t, what)
                                            : Status::success();
                               });
      !s)
    return s;

  // Ties are found on the graph as the importer saw it, before any change.
  std::vector<TiedInitializer> tied = findTiedInitializers(model.graph());
  std::set<std::string> tiedSources;
  for (const auto &t : tied)
    tiedSources.insert(t.parameter);

  std::map<std::string, Tensor *> initializers;
  for (auto &t : *model.mutable_graph()->mutable_initializer())
    initializers.emplace(t.name(), &t);
  std::map<std::string, rt::HostTensor> trained; // those tied copies need
  for (const std::string &name : weights.names) {
    auto it = initializers.find(name);
    if (it == initializers.end())
      return Status::error(sourceModel + ": has no initializer " + quoted(name) +
                           " for the trained parameter of that name (was the model "
                           "changed during training?)");
    rt::StatusOr<rt::HostTensor> read = weights.read(name);
    if (!read.ok())
      return Status(read.status()).withPrefix("--export-onnx: ");
    rt::HostTensor value = *std::move(read);
    if (Status s = replaceWith(*it->second, value, sourceModel + ": initializer " + quoted(name));
        !s)
      return s;
    if (tiedSources.count(name))
      trained.emplace(name, std::move(value));
  }
  for (const auto &t : tied) {
    auto source = trained.find(t.parameter);
    if (source == trained.end())
      continue; // not trained (frozen): the copy keeps its value too
    const rt::HostTensor &value = source->second;
    Tensor &copy = *initializers.at(t.name);
    std::string what = sourceModel + ": initializer " + quoted(t.name) + " (" +
                       (t.transposed ? "the transpose of " : "a copy of ") + quoted(t.parameter) +
                       ")";
    if (!t.transposed) {
      if (Status s = replaceWith(copy, value, what); !s)
        return s;
      continue;
    }
    rt::DType dtype;
    if (value.shape.size() != 2 || !parameterDType(copy.data_type(), dtype) ||
        dtype != value.dtype ||
        dimsOf(copy) != std::vector<int64_t>{value.shape[1], value.shape[0]})
      return Status::error(what + " is " + typeName(copy.data_type()) + " " +
                           rt::formatShape(dimsOf(copy)) + ", which is not the transpose of " +
                           "the trained " + rt::formatType(value.dtype, value.shape));
    setRawData(copy, transposedBytes(value));
  }
  trained.clear();

  if (model.ByteSizeLong() > options.maxInlineBytes)
    return writeWithExternalData(model, outPath, options);
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return Status::error(outPath + ": the model does not serialize");
  model.Clear();
  return rt::writeFileAtomic(outPath, bytes, rt::systemFileSystem());
}

Status exportTrainedOnnx(const std::string &sourceModel, const std::string &outPath,
                         const rt::Session &session) {
  TrainedWeights weights;
  for (const rt::Slot *slot : session.manifest().slotsOfKind(rt::SlotKind::Param))
    if (slot->trainable)
      weights.names.push_back(slot->name);
  weights.read = [&](const std::string &name) { return session.getParam(name); };
  return exportTrainedOnnx(sourceModel, outPath, weights);
}

} // namespace trc
