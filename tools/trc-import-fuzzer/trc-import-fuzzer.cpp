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

// UBSan only prints by default; stop at the first report so that libFuzzer
// records the input (UBSAN_OPTIONS in the environment still override this).
extern "C" const char *__ubsan_default_options() {
  return "halt_on_error=1:print_stacktrace=1";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // One context for the whole run: dialect loading is the expensive part, and
  // types/attributes interned by one input do not change how the next imports.
  static mlir::MLIRContext *context = [] {
    auto *ctx = new mlir::MLIRContext(mlir::MLIRContext::Threading::DISABLED);
    trc::loadImportDialects(*ctx);
    return ctx;
  }();
  static const trc::ImportOptions options = [] {
    trc::ImportOptions o;
    o.dimSizes = {{"batch", 2}, {"sequence", 16}};
    o.allowExternalData = false;
    return o;
  }();

  llvm::StringRef bytes(reinterpret_cast<const char *>(data), size);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      trc::importOnnxBytes(bytes, "fuzz.onnx", context, options, llvm::nulls());
  (void)module; // destroyed here; only crashes and sanitizer reports matter
  return 0;
}
