//===- UpwardInclude.cpp - a formats/ file reaching up into train/ ---------===//
//
// Never builds, on purpose: ctest runtime-upward-include-does-not-build
// compiles this file as TrcFormats' code is compiled (seeing only the
// support and formats folders and the ABI headers) and passes when the
// compiler stops at the include below. If it ever compiled, the runtime's
// layering (runtime/CMakeLists.txt) would no longer be enforced.
//
//===----------------------------------------------------------------------===//
#include "runtime/formats/Json.h"
#include "runtime/train/Trainer.h"
