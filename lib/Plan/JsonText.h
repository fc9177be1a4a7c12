//===- JsonText.h - a parsed JSON value written back as text ---*- C++ -*-===//
//
// Internal to lib/Plan: PlanSpec.cpp passes the keys it does not consume on
// to the runtime's plan parser, ProfileFile.cpp keeps a profile's raw
// samples; both re-serialize a JsonValue (compact, members in file order,
// numbers as their source text).
//
//===----------------------------------------------------------------------===//
#ifndef TRC_LIB_PLAN_JSONTEXT_H
#define TRC_LIB_PLAN_JSONTEXT_H

#include "runtime/formats/Json.h"

#include <string>

namespace trc::plan {

std::string jsonText(const rt::JsonValue &v);

} // namespace trc::plan

#endif // TRC_LIB_PLAN_JSONTEXT_H
