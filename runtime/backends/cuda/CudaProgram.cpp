//===- CudaProgram.cpp - the kernels of a loaded cuda artifact --------------===//
//
// See CudaProgram.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/backends/cuda/CudaProgram.h"

#include <atomic>
#include <map>
#include <mutex>

namespace trc::rt {

uint64_t newCudaProgramId() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

StatusOr<const CudaImage *> selectCudaImage(const CudaProgram &program, int major, int minor,
                                            bool preferPtx) {
  const CudaImage *cubin = nullptr, *ptx = nullptr;
  for (const CudaImage &candidate : program.images) {
    if (candidate.ptx) {
      bool fits = candidate.major < major ||
                  (candidate.major == major && candidate.minor <= minor);
      if (fits && (!ptx || candidate.major > ptx->major ||
                   (candidate.major == ptx->major && candidate.minor > ptx->minor)))
        ptx = &candidate;
    } else if (candidate.major == major && candidate.minor <= minor &&
               (!cubin || candidate.minor > cubin->minor)) {
      cubin = &candidate;
    }
  }
  if (const CudaImage *image = preferPtx && ptx ? ptx : cubin ? cubin : ptx)
    return image;
  std::string chips;
  for (const CudaImage &candidate : program.images)
    chips += std::string(chips.empty() ? "" : ", ") + candidate.chip +
             (candidate.ptx ? " ptx" : " cubin");
  return Status::error("the artifact's kernels were not compiled for this GPU (sm_" +
                       std::to_string(major) + std::to_string(minor) + "): it has " +
                       (chips.empty() ? std::string("no kernel files") : chips) +
                       " (a cubin runs on its major version at the same or a newer "
                       "minor; PTX on its chip or newer); recompile with that chip");
}

namespace {
struct Registry {
  std::mutex mutex;
  std::multimap<EntryFn, std::shared_ptr<const CudaProgram>> programs;
};
Registry &registry() {
  static Registry r;
  return r;
}
} // namespace

void registerCudaProgram(EntryFn entry, std::shared_ptr<const CudaProgram> program) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.programs.emplace(entry, std::move(program));
}

void unregisterCudaProgram(EntryFn entry, uint64_t id) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [first, last] = r.programs.equal_range(entry);
  for (auto it = first; it != last; ++it)
    if (it->second->id == id) {
      r.programs.erase(it);
      return;
    }
}

std::shared_ptr<const CudaProgram> findCudaProgram(EntryFn entry) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto [first, last] = r.programs.equal_range(entry);
  std::shared_ptr<const CudaProgram> latest;
  for (auto it = first; it != last; ++it)
    if (!latest || it->second->id > latest->id)
      latest = it->second;
  return latest;
}

bool isCudaProgramRegistered(uint64_t id) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  for (const auto &entry : r.programs)
    if (entry.second->id == id)
      return true;
  return false;
}

} // namespace trc::rt
