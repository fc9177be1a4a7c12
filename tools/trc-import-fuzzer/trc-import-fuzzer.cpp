//===- trc-import-fuzzer.cpp - libFuzzer target for the ONNX importer -------===//
//
// Feeds arbitrary bytes to trc::importOnnxBytes as if they were an .onnx file
// and throws the result away: the importer must reject bad input with `error:`
// lines (sent to llvm::nulls() here) and a null module, never crash, leak,
// hit undefined behaviour or hang. External data is refused
// (ImportOptions::allowExternalData = false), so no input makes the importer
// open a file; the symbolic dimensions 'batch' and 'sequence' (the names
// scripts/export_models.py uses) get sizes so dynamic-axis seeds import fully.
//
// Build (clang, ASan + UBSan + libFuzzer; see tools/trc-import-fuzzer/CMakeLists.txt):
//   CC=clang-22 CXX=clang++-22 cmake -G Ninja -S . -B build-fuzz \
//       -DTRC_ENABLE_FUZZER=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
//   ninja -C build-fuzz trc-import-fuzzer
// Run (scripts/fuzz_importer.sh does both and builds a seed corpus):
//   build-fuzz/bin/trc-import-fuzzer CORPUS_DIR -max_len=65536 -timeout=20
// Reproduce one input:
//   build-fuzz/bin/trc-import-fuzzer crash-<sha1>
//
//===----------------------------------------------------------------------===//
#include "trc/Import/OnnxImporter.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/raw_ostream.h"

#include <cstddef>
#include <cstdint>
#include <memory>

// UBSan only prints by default; stop at the first report so that libFuzzer
// records the input (UBSAN_OPTIONS in the environment still override this).
extern "C" const char *__ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}

// ASan's "use-after-poison" in MLIR's attribute storage (issue 33, seen twice
// in 30M+ executions, its trace in bench/RESULTS.md) is a mixed-build false
// positive: LLVM's BumpPtrAllocator poisons a new slab's free bytes when its
// inline header code runs in this ASan-built binary (LLVM_ADDRESS_SANITIZER_
// BUILD is 1 here), while Debian's libMLIR, built without ASan, takes later
// allocations from the same slab without unpoisoning them; the next intercepted
// memmove into them reports. User poisoning is therefore off: ASan still checks
// every heap object's bounds and lifetime, only the allocator's manual marks go.
extern "C" const char *__asan_default_options() { return "allow_user_poisoning=0"; }

// Inputs one context serves before it is replaced: types and attributes an
// input interns (its constants' data among them) live as long as the
// context, and one context for a run of millions grew the harness past
// libFuzzer's RSS limit (bench/RESULTS.md, issue 33). Loading the dialects
// again every so many inputs costs nothing measurable.
constexpr unsigned kInputsPerContext = 20000;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static std::unique_ptr<mlir::MLIRContext> context;
  static unsigned served = 0;
  if (!context || served++ == kInputsPerContext) {
    context = std::make_unique<mlir::MLIRContext>(mlir::MLIRContext::Threading::DISABLED);
    trc::loadImportDialects(*context);
    served = 1;
  }
  static const trc::ImportOptions options = [] {
    trc::ImportOptions o;
    o.dimSizes = {{"batch", 2}, {"sequence", 16}};
    o.allowExternalData = false;
    return o;
  }();

  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      trc::importOnnxBytes(bytes, "fuzz.onnx", context.get(), options, llvm::nulls());
  (void)module; // destroyed here; only crashes and sanitizer reports matter
  return 0;
}
