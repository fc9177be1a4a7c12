//===- TrcSharding.cpp - #trc.sharding's syntax and verifier ---------------===//
//
//   #trc.sharding<[{}, 3 x {tensor}], partial = sum {tensor}>
//
// Per dim `{}` (whole) or `[BLOCKS x [mirrored]] {AXIS}`; an optional
// pending partial result over one axis with its reduction (sum, max, ...).
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

#include "mlir/IR/DialectImplementation.h"

using namespace mlir;
using namespace trc;

Attribute ShardingAttr::parse(AsmParser &p, Type) {
  SmallVector<StringAttr> axes;
  SmallVector<int64_t> blocks;
  SmallVector<bool> mirrored;
  auto parseDim = [&]() -> ParseResult {
    int64_t count = 1;
    OptionalParseResult number = p.parseOptionalInteger(count);
    if (number.has_value() && (failed(*number) || p.parseKeyword("x")))
      return failure();
    mirrored.push_back(number.has_value() && succeeded(p.parseOptionalKeyword("mirrored")));
    if (p.parseLBrace())
      return failure();
    std::string axis;
    if (succeeded(p.parseOptionalRBrace())) {
      axes.push_back(StringAttr::get(p.getContext(), ""));
    } else {
      if (p.parseKeywordOrString(&axis) || p.parseRBrace())
        return failure();
      axes.push_back(StringAttr::get(p.getContext(), axis));
    }
    blocks.push_back(count);
    return success();
  };
  if (p.parseLess() || p.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
    return {};
  StringAttr partialAxis = StringAttr::get(p.getContext(), "");
  CollectiveReduction kind = CollectiveReduction::Sum;
  if (succeeded(p.parseOptionalComma())) {
    std::string kindName, axis;
    if (p.parseKeyword("partial") || p.parseEqual() || p.parseKeywordOrString(&kindName) ||
        p.parseLBrace() || p.parseKeywordOrString(&axis) || p.parseRBrace())
      return {};
    std::optional<CollectiveReduction> parsed = symbolizeCollectiveReduction(kindName);
    if (!parsed) {
      p.emitError(p.getCurrentLocation(), "unknown partial reduction '") << kindName << "'";
      return {};
    }
    kind = *parsed;
    partialAxis = StringAttr::get(p.getContext(), axis);
  }
  SMLoc end = p.getCurrentLocation();
  if (p.parseGreater())
    return {};
  // getChecked is defined with the attribute's storage (TrcDialect.cpp).
  return ShardingAttr::getChecked([&] { return p.emitError(end); }, p.getContext(),
                                  ArrayRef<StringAttr>(axes), ArrayRef<int64_t>(blocks),
                                  ArrayRef<bool>(mirrored), partialAxis, kind);
}

void ShardingAttr::print(AsmPrinter &p) const {
  p << "<[";
  for (size_t d = 0; d < getAxes().size(); ++d) {
    if (d)
      p << ", ";
    if (getBlocks()[d] != 1)
      p << getBlocks()[d] << (getMirrored()[d] ? " x mirrored " : " x ");
    p << "{" << getAxes()[d].getValue() << "}";
  }
  p << "]";
  if (getPartialAxis() && !getPartialAxis().getValue().empty())
    p << ", partial = " << stringifyCollectiveReduction(getPartialKind()) << " {"
      << getPartialAxis().getValue() << "}";
  p << ">";
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   ArrayRef<StringAttr> axes, ArrayRef<int64_t> blocks,
                                   ArrayRef<bool> mirrored, StringAttr partialAxis,
                                   CollectiveReduction) {
  if (axes.size() != blocks.size() || axes.size() != mirrored.size())
    return emitError() << "sharding has " << axes.size() << " dims but " << blocks.size()
                       << " block counts and " << mirrored.size() << " mirrored flags";
  for (size_t d = 0; d < axes.size(); ++d) {
    if (blocks[d] < 1)
      return emitError() << "sharding dim " << d << ": block count must be positive";
    if (blocks[d] != 1 && axes[d].getValue().empty())
      return emitError() << "sharding dim " << d << " has blocks but no axis";
    if (mirrored[d] && blocks[d] % 2)
      return emitError() << "sharding dim " << d
                         << ": a mirrored split needs an even block count, got " << blocks[d];
    for (size_t e = 0; e < d; ++e)
      if (!axes[d].getValue().empty() && axes[d] == axes[e])
        return emitError() << "sharding splits dims " << e << " and " << d << " over axis '"
                           << axes[d].getValue() << "'";
    if (partialAxis && !axes[d].getValue().empty() && axes[d] == partialAxis)
      return emitError() << "sharding splits dim " << d << " over axis '"
                         << axes[d].getValue() << "' and is partial over it";
  }
  return success();
}
