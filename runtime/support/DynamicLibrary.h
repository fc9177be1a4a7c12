//===- DynamicLibrary.h - libraries loaded at run time ----------------------===//
//
// The two steps every run-time-loaded library (NCCL, the CUDA driver,
// cuBLASLt) takes: dlopen it, keeping dlerror's text for the message, and
// dlsym a table of entry points, remembering the first required one that is
// missing. Callers word the errors (which library, how to install it).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_RUNTIME_DYNAMICLIBRARY_H
#define TRC_RUNTIME_DYNAMICLIBRARY_H

#include <dlfcn.h>

#include <string>

namespace trc::rt {

/// dlopen(name, RTLD_NOW | scope); null with dlerror's text in `why`.
inline void *openLibrary(const std::string &name, std::string &why, int scope = RTLD_LOCAL) {
  ::dlerror();
  void *lib = ::dlopen(name.c_str(), RTLD_NOW | scope);
  if (!lib) {
    const char *e = ::dlerror();
    why = e ? e : "unknown dlopen error";
  }
  return lib;
}

/// dlsym every slot it is called with; the first missing required name in
/// `missing`.
struct SymbolBinder {
  void *lib;
  std::string missing;
  template <typename T> void operator()(T &slot, const char *name, bool optional = false) {
    slot = reinterpret_cast<T>(::dlsym(lib, name));
    if (!slot && !optional && missing.empty())
      missing = name;
  }
};

} // namespace trc::rt

#endif // TRC_RUNTIME_DYNAMICLIBRARY_H
