//===- TrcInterfaces.cpp - the trc op interfaces --------------------------===//
//
// Definitions generated from TrcInterfaces.td (VjpOpInterface). The
// implementations live elsewhere as external models: the VJP rules in
// lib/Training/Vjp*.cpp, attached by trc::autodiff::registerVjpRules.
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

#include "TrcInterfaces.cpp.inc"
