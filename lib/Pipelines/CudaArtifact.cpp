//===- CudaArtifact.cpp - PTX -> cubins, kernel table ------------------------===//
#include "CudaArtifact.h"
#include "ArtifactWriter.h"

#include "trc/Abi/AttrNames.h"

#include "runtime/formats/Checksum.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "llvm/Support/FileSystem.h"
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

/// "<kind> <chip> <file> <bytes> xxh3:<hex>" for a file written in `dir`.
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
                     rt::formatChecksum(rt::checksumOf(rt::ChecksumKind::Xxh3,
                                                       (*bytes)->getBufferStart(),
                                                       (*bytes)->getBufferSize())))
                        .str());
  return true;
}

/// One ptxas run (PTX -> cubin for a chip), started without waiting so that
/// the chips assemble in parallel.
class PtxasJob {
public:
  PtxasJob(std::string chip, std::string ptx, std::string cubin)
      : chip(std::move(chip)), ptx(std::move(ptx)), cubin(std::move(cubin)) {}
  ~PtxasJob() {
    if (!log.empty())
      llvm::sys::fs::remove(log);
  }

  bool start(const std::string &ptxas, std::string &error) {
    this->ptxas = ptxas;
    if (auto ec = llvm::sys::fs::createTemporaryFile("trc-ptxas", "log", log)) {
      error = "cannot create a temporary file for ptxas: " + ec.message();
      return false;
    }
    arch = "-arch=" + chip;
    llvm::SmallVector<llvm::StringRef> args{ptxas, arch, "-O3", "-o", cubin, ptx};
    std::optional<llvm::StringRef> redirects[] = {std::nullopt, llvm::StringRef(log),
                                                  llvm::StringRef(log)};
    std::string message;
    process = llvm::sys::ExecuteNoWait(ptxas, args, std::nullopt, redirects, 0, &message);
    if (!process.Pid) {
      error = "cannot run " + ptxas + ": " + message;
      return false;
    }
    return true;
  }

  /// Waits for it; on failure `error` holds ptxas's diagnostics.
  bool finish(std::string &error) {
    std::string message;
    llvm::sys::ProcessInfo done = llvm::sys::Wait(process, std::nullopt, &message);
    if (done.ReturnCode == 0)
      return true;
    std::string output;
    if (auto text = llvm::MemoryBuffer::getFile(log))
      output = (*text)->getBuffer().take_front(2000).rtrim().str();
    error = "ptxas (" + ptxas + " " + arch + ") failed with exit status " +
            std::to_string(done.ReturnCode) + (message.empty() ? "" : " (" + message + ")") +
            (output.empty() ? "" : ":\n" + output);
    return false;
  }

  std::string chip, ptx, cubin;

private:
  std::string ptxas, arch;
  llvm::SmallString<128> log;
  llvm::sys::ProcessInfo process;
};

} // namespace

LogicalResult emitCudaKernels(ModuleOp module, llvm::StringRef dir,
                              std::vector<std::string> &records, std::string &error) {
  auto table = module->getAttrOfType<ArrayAttr>(trc::abi::kCudaKernelsAttr);
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
    std::vector<std::unique_ptr<PtxasJob>> jobs;
    bool ok = true;
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      auto target = dyn_cast<NVVM::NVVMTargetAttr>(object.getTarget());
      if (!target || object.getFormat() != gpu::CompilationTarget::Assembly) {
        error = "gpu.binary @trc_kernels holds an object that is not NVVM PTX";
        ok = false;
        break;
      }
      std::string chip = target.getChip().str();
      auto job = std::make_unique<PtxasJob>(chip, "kernels." + chip + ".ptx",
                                            "kernels." + chip + ".cubin");
      std::string ptxPath = (dir + "/" + job->ptx).str();
      job->ptx = ptxPath;
      job->cubin = (dir + "/" + job->cubin).str();
      if (!writeArtifactFile(ptxPath, object.getObject().getValue(), error) ||
          !job->start(ptxas, error)) {
        ok = false;
        break;
      }
      jobs.push_back(std::move(job));
    }
    // Every started ptxas is waited for, even after a failure.
    for (auto &job : jobs) {
      std::string jobError;
      if (!job->finish(jobError) && ok) {
        error = jobError;
        ok = false;
      }
    }
    for (auto &job : jobs) {
      if (!ok)
        break;
      std::string chip = job->chip;
      ok = fileRecord("cubin", chip, dir, "kernels." + chip + ".cubin", records, error) &&
           fileRecord("ptx", chip, dir, "kernels." + chip + ".ptx", records, error);
    }
    if (!ok)
      return failure();
    binary.erase();
  }
  for (auto [i, name] : llvm::enumerate(table.getAsValueRange<StringAttr>()))
    records.push_back("kernel " + std::to_string(i) + " " + name.str());
  module->removeAttr("gpu.container_module");
  module->removeAttr(trc::abi::kCudaKernelsAttr);
  return success();
}

} // namespace trc
