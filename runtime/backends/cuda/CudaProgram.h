//===- CudaProgram.h - the kernels of a loaded cuda artifact ----------------===//
//
// What the CUDA backend needs from a `target cuda` artifact besides its
// entry point: the kernel table (names, by index) and the kernel images
// (cubin and PTX bytes per chip, docs/ARTIFACT.md "Target cuda"). The
// Artifact reads and checks the files, builds a CudaProgram and registers it
// under the program's entry point; the backend finds it from the entry it is
// asked to run (Backend::run takes only the entry), so neither the Backend
// interface nor the Session knows about kernels. Nothing here needs the
// CUDA driver.
//
// Image choice (selectCudaImage), for a device of compute capability
// major.minor: the cubin of the same major and the highest minor not above
// the device's; else (or always, with preferPtx) the PTX of the highest chip
// not above the device, which the driver compiles (JIT); else an error that
// names the device's chip and the chips the artifact has.
//
// Registry: registerCudaProgram(entry, program) (the latest registration of
// an entry wins), unregisterCudaProgram(entry, id) when the artifact goes,
// findCudaProgram(entry). Every program has a process-unique id, so a
// backend's caches never confuse two programs loaded at the same address.
// Preconditions: none; the registry is thread-safe.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_CUDAPROGRAM_H
#define TRC_RUNTIME_CUDAPROGRAM_H

#include "runtime/backends/Backend.h"
#include "runtime/formats/Manifest.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace trc::rt {

// The chips' spelling (parseCudaChip) is the manifest's: runtime/formats/Manifest.h.

struct CudaImage {
  bool ptx = false; // PTX text (JIT) rather than a cubin
  std::string chip; // "sm_90"
  int major = 0, minor = 0;
  std::string file;  // for messages
  std::string bytes; // the file's contents
};

struct CudaProgram {
  uint64_t id = 0; // newCudaProgramId()
  std::string origin; // the artifact folder (for messages)
  std::vector<std::string> kernels; // the kernel table, by index
  std::vector<CudaImage> images;
  // Slots of the entry (the slots array's length), for graph reuse checks.
  size_t numSlots = 0;
};

uint64_t newCudaProgramId();

/// The image of `program` to load on an sm_<major><minor> GPU (a pointer
/// into program.images), or an error listing the chips it has.
StatusOr<const CudaImage *> selectCudaImage(const CudaProgram &program, int major, int minor,
                                            bool preferPtx);

void registerCudaProgram(EntryFn entry, std::shared_ptr<const CudaProgram> program);
void unregisterCudaProgram(EntryFn entry, uint64_t id);
std::shared_ptr<const CudaProgram> findCudaProgram(EntryFn entry);
// Whether a program of that id is still registered.
bool isCudaProgramRegistered(uint64_t id);

} // namespace trc::rt

#endif // TRC_RUNTIME_CUDAPROGRAM_H
