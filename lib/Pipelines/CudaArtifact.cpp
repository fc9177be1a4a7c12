//===- CudaArtifact.cpp - PTX -> cubins, kernel table ------------------------===//
#include "CudaArtifact.h"

#include "runtime/Checksum.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace trc {

namespace {

/// ptxas from the toolkit trc was built with, else from PATH.
std::string findPtxas() {
  if (std::string toolkit = cudaToolkitPath(); !toolkit.empty()) {
    std::string path = toolkit + "/bin/ptxas";
    if (llvm::sys::fs::can_execute(path))
      return path;
  }
  if (auto onPath = llvm::sys::findProgramByName("ptxas"))
    return *onPath;
  return "";
}

bool writeFile(const std::string &path, llvm::StringRef bytes, std::string &error) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec);
  if (!ec) {
    out << bytes;
    out.close();
    ec = out.error();
  }
  if (ec)
    error = "cannot write " + path + ": " + ec.message();
  return !ec;
}

/// "<kind> <chip> <file> <bytes> <fnv1a64>" for a file written in `dir`.
bool fileRecord(llvm::StringRef kind, llvm::StringRef chip, llvm::StringRef dir,
                const std::string &file, std::vector<std::string> &records,
                std::string &error) {
  auto bytes = llvm::MemoryBuffer::getFile(dir + "/" + file);
  if (!bytes) {
    error = "cannot read back " + file + ": " + bytes.getError().message();
    return false;
  }
  records.push_back((kind + " " + chip + " " + file + " " +
                     std::to_string((*bytes)->getBufferSize()) + " " +
                     rt::toHex16(rt::fnv1a64((*bytes)->getBufferStart(),
                                             (*bytes)->getBufferSize())))
                        .str());
  return true;
}

/// Runs ptxas on `ptx` for `chip`; on failure `error` holds its diagnostics.
bool runPtxas(const std::string &ptxas, llvm::StringRef chip, const std::string &ptx,
              const std::string &cubin, std::string &error) {
  llvm::SmallString<128> log;
  if (auto ec = llvm::sys::fs::createTemporaryFile("trc-ptxas", "log", log)) {
    error = "cannot create a temporary file for ptxas: " + ec.message();
    return false;
  }
  llvm::FileRemover removeLog(log);
  std::string arch = ("-arch=" + chip).str();
  llvm::SmallVector<llvm::StringRef> args{ptxas, arch, "-O3", "-o", cubin, ptx};
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                llvm::StringRef(log)};
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0, &message);
  if (rc == 0)
    return true;
  std::string output;
  if (auto text = llvm::MemoryBuffer::getFile(log))
    output = (*text)->getBuffer().take_front(2000).rtrim().str();
  error = "ptxas (" + ptxas + " " + arch + ") failed with exit status " + std::to_string(rc) +
          (message.empty() ? "" : " (" + message + ")") +
          (output.empty() ? "" : ":\n" + output);
  return false;
}

} // namespace

LogicalResult emitCudaKernels(ModuleOp module, llvm::StringRef dir,
                              std::vector<std::string> &records, std::string &error) {
  auto table = module->getAttrOfType<ArrayAttr>("trc.cuda_kernels");
  if (!table) {
    error = "the lowered module has no kernel table (trc.cuda_kernels)";
    return failure();
  }
  auto binary = module.lookupSymbol<gpu::BinaryOp>("trc_kernels");
  if (!binary && !table.empty()) {
    error = "the lowered module launches kernels but has no gpu.binary @trc_kernels";
    return failure();
  }
  if (binary) {
    std::string ptxas = findPtxas();
    if (ptxas.empty()) {
      error = "cannot find CUDA's ptxas (looked in " +
              (cudaToolkitPath().empty() ? std::string("no toolkit")
                                         : cudaToolkitPath() + "/bin") +
              " and on PATH): install the CUDA toolkit or put its bin folder on PATH";
      return failure();
    }
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Assembly) {
        error = "gpu.binary @trc_kernels holds an object that is not NVVM PTX";
        return failure();
      }
      std::string chip = target.getChip().str();
      std::string ptx = "kernels." + chip + ".ptx", cubin = "kernels." + chip + ".cubin";
      std::string ptxPath = (dir + "/" + ptx).str(), cubinPath = (dir + "/" + cubin).str();
      if (!writeFile(ptxPath, object.getObject().getValue(), error) ||
          !runPtxas(ptxas, chip, ptxPath, cubinPath, error) ||
          !fileRecord("cubin", chip, dir, cubin, records, error) ||
          !fileRecord("ptx", chip, dir, ptx, records, error))
        return failure();
    }
    binary.erase();
  }
  for (auto [i, name] : llvm::enumerate(table.getAsValueRange<StringAttr>()))
    records.push_back("kernel " + std::to_string(i) + " " + name.str());
  module->removeAttr("gpu.container_module");
  module->removeAttr("trc.cuda_kernels");
  return success();
}

} // namespace trc
