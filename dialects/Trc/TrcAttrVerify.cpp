//===- TrcAttrVerify.cpp - the discardable trc.* attributes' verifier ----===//
//
// The importer and the passes annotate modules, functions, their arguments
// and results, and ops with discardable `trc.*` attributes (every name is in
// include/trc/Abi/AttrNames.h). The dialect's hooks check each one: a known
// name, where it may appear (on an operation, an argument or a result), and
// its kind; anything else under `trc.` is an error, so a misspelled name
// fails at the verifier instead of being silently ignored by its reader.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Abi/SlotNames.h"
#include "trc/Dialect/Trc.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;
using namespace trc;

namespace {

enum Place : unsigned { OnOp = 1, OnArg = 2, OnResult = 4 };

/// What a known attribute is: where it may appear and, for each place, the
/// kind its value must have.
struct KnownAttr {
  unsigned places;
  bool (*isKind)(Attribute, Place);
  const char *kind; // for the diagnostic: "must be <kind>"
};

template <typename AttrT> bool is(Attribute a, Place) { return isa<AttrT>(a); }
constexpr auto isI64Array = is<DenseI64ArrayAttr>;
/// trc.sharding: one #trc.sharding on an argument; on an op, an array with
/// one per result.
bool isSharding(Attribute a, Place place) {
  if (place == OnArg)
    return isa<ShardingAttr>(a);
  auto array = dyn_cast<ArrayAttr>(a);
  return array && llvm::all_of(array, [](Attribute e) { return isa<ShardingAttr>(e); });
}

const llvm::StringMap<KnownAttr> &knownAttrs() {
  static const llvm::StringMap<KnownAttr> known = [] {
    llvm::StringMap<KnownAttr> m;
    auto add = [&](const char *name, unsigned places, bool (*isKind)(Attribute, Place),
                   const char *kind) {
      bool added = m.try_emplace(name, KnownAttr{places, isKind, kind}).second;
      assert(added && "a trc attribute listed twice");
      (void)added;
    };
    const char *string = "a string", *unit = "a unit attribute",
               *integer = "an integer", *dictionary = "a dictionary",
               *array = "an array", *i64s = "an array<i64: ...>";
    // Slot names of a function's arguments and results.
    add(abi::kInputAttr, OnArg, is<StringAttr>, string);
    add(abi::kParamAttr, OnArg, is<StringAttr>, string);
    add(abi::kStateAttr, OnArg, is<StringAttr>, string);
    add(abi::kArenaAttr, OnArg, is<UnitAttr>, unit);
    add(abi::kLearningRate, OnArg, is<UnitAttr>, unit);
    add(abi::kStepCount, OnArg, is<UnitAttr>, unit);
    // Results' names move to arguments when the lowering turns results into
    // out-parameters (buffer-results-to-out-params).
    add(abi::kOutputAttr, OnResult | OnArg, is<StringAttr>, string);
    add(abi::kUpdateAttr, OnResult | OnArg, is<StringAttr>, string);
    add(abi::kGradOfAttr, OnResult | OnArg, is<StringAttr>, string);
    add(abi::kNormExcludedAttr, OnResult | OnArg, is<UnitAttr>, unit);
    // Data and tensor parallelism.
    add(abi::kShardDegreeAttr, OnArg | OnResult, is<IntegerAttr>, integer);
    add(abi::kShardOfAttr, OnArg | OnResult, isI64Array, i64s);
    add(abi::kGridAttr, OnOp, is<DictionaryAttr>, dictionary);
    add(abi::kShardingAttr, OnOp | OnArg, isSharding,
        "a #trc.sharding (on an argument) or an array of them, one per result (on an op)");
    add(abi::kSplitAttr, OnArg, isI64Array, i64s);
    add(abi::kSplitOfAttr, OnArg, isI64Array, i64s);
    add(abi::kCausalChunkAttr, OnOp, is<IntegerAttr>, integer);
    // Pipeline parallelism.
    add(abi::kStageAttr, OnOp | OnArg | OnResult, is<IntegerAttr>, integer);
    add(abi::kBackwardAttr, OnOp, is<UnitAttr>, unit);
    add(abi::kPipelineAttr, OnOp, is<DictionaryAttr>, dictionary);
    add(abi::kPipelineTransfersAttr, OnOp, is<ArrayAttr>, array);
    add(abi::kPipelineGradsAttr, OnOp, is<IntegerAttr>, integer);
    // Memory.
    add(abi::kArenaBytesAttr, OnOp, is<IntegerAttr>, integer);
    add(abi::kArenaLowerBoundBytesAttr, OnOp, is<IntegerAttr>, integer);
    add(abi::kArenaNoReuseBytesAttr, OnOp, is<IntegerAttr>, integer);
    add(abi::kHostArenaBytesAttr, OnOp, is<IntegerAttr>, integer);
    add(abi::kHostPoolAttr, OnOp, is<UnitAttr>, unit);
    add(abi::kRecomputeAttr, OnOp, is<IntegerAttr>, integer);
    add(abi::kRecomputePlanAttr, OnOp, is<DictionaryAttr>, dictionary);
    add(abi::kRecomputedAttr, OnOp, is<UnitAttr>, unit);
    add(abi::kMeanTripsAttr, OnOp, is<IntegerAttr>, integer);
    add(abi::kFinishViewAttr, OnOp, is<UnitAttr>, unit);
    add(abi::kOffloadPlanAttr, OnOp, is<DictionaryAttr>, dictionary);
    // Fusion, code generation, profiling, the importer.
    add(abi::kUnfusedCostAttr, OnOp, isI64Array, i64s);
    add(abi::kCudaKernelsAttr, OnOp, is<ArrayAttr>, array);
    add(abi::kProfileSpansAttr, OnOp, is<ArrayAttr>, array);
    add(abi::kAnomalySitesAttr, OnOp, is<ArrayAttr>, array);
    add(abi::kOpsetAttr, OnOp, is<IntegerAttr>, integer);
    add(abi::kProducerAttr, OnOp, is<StringAttr>, string);
    return m;
  }();
  return known;
}

const char *placeName(Place place) {
  switch (place) {
  case OnOp: return "an operation";
  case OnArg: return "an argument";
  case OnResult: return "a result";
  }
  return "";
}

std::string placesOf(unsigned places) {
  std::string out;
  for (Place p : {OnOp, OnArg, OnResult})
    if (places & p)
      out += (out.empty() ? "" : " or ") + std::string(placeName(p));
  return out;
}

/// `where` prefixes the diagnostic ("argument 2: ").
LogicalResult verifyTrcAttribute(Operation *op, NamedAttribute attribute, Place place,
                                 const std::string &where) {
  StringRef name = attribute.getName().strref();
  const auto &known = knownAttrs();
  auto it = known.find(name);
  if (it == known.end())
    return op->emitOpError() << where << "unknown trc attribute '" << name
                             << "' (the trc.* attributes are listed in trc/Abi/AttrNames.h)";
  const KnownAttr &k = it->second;
  if (!(k.places & place))
    return op->emitOpError() << where << "'" << name << "' may not be on " << placeName(place)
                             << ", only on " << placesOf(k.places);
  if (!k.isKind(attribute.getValue(), place))
    return op->emitOpError() << where << "'" << name << "' must be " << k.kind << ", not "
                             << attribute.getValue();
  return success();
}

} // namespace

LogicalResult TrcDialect::verifyOperationAttribute(Operation *op, NamedAttribute attribute) {
  return verifyTrcAttribute(op, attribute, OnOp, "");
}

LogicalResult TrcDialect::verifyRegionArgAttribute(Operation *op, unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  (void)regionIndex;
  return verifyTrcAttribute(op, attribute, OnArg, "argument " + std::to_string(argIndex) + ": ");
}

LogicalResult TrcDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                                      unsigned resultIndex,
                                                      NamedAttribute attribute) {
  (void)regionIndex;
  return verifyTrcAttribute(op, attribute, OnResult,
                            "result " + std::to_string(resultIndex) + ": ");
}
