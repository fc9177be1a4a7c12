//===- TrcFusion.cpp - trc.fusion and trc.yield ----------------------------===//
//
// Printing, parsing and verification of fused regions (dialects/Trc/
// TrcFusion.td). The textual form names each block argument with the value
// it is bound to:
//
//   %r = trc.fusion elementwise (%a = %x : tensor<4xf32>) -> (tensor<4xf32>) {
//     ...
//     trc.yield %v : tensor<4xf32>
//   }
//
//===----------------------------------------------------------------------===//
#include "trc/Dialect/Trc.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace trc;

YieldOp FusionOp::getYield() { return cast<YieldOp>(getBodyBlock().getTerminator()); }

ParseResult FusionOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  StringRef kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&kindName))
    return failure();
  std::optional<FusionKind> kind = symbolizeFusionKind(kindName);
  if (!kind)
    return parser.emitError(kindLoc) << "unknown fusion kind '" << kindName
                                     << "' (elementwise, reduction or matmul_epilogue)";
  result.addAttribute("kind", FusionKindAttr::get(b.getContext(), *kind));

  SmallVector<OpAsmParser::Argument> args;
  SmallVector<OpAsmParser::UnresolvedOperand> operands;
  SmallVector<Type> operandTypes;
  auto parseBinding = [&]() -> ParseResult {
    OpAsmParser::Argument arg;
    OpAsmParser::UnresolvedOperand operand;
    if (parser.parseArgument(arg) || parser.parseEqual() ||
        parser.parseOperand(operand) || parser.parseColonType(arg.type))
      return failure();
    args.push_back(arg);
    operands.push_back(operand);
    operandTypes.push_back(arg.type);
    return success();
  };
  SMLoc operandsLoc = parser.getCurrentLocation();
  if (parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, parseBinding) ||
      parser.resolveOperands(operands, operandTypes, operandsLoc, result.operands))
    return failure();

  SmallVector<Type> resultTypes;
  if (parser.parseArrow() ||
      parser.parseCommaSeparatedList(OpAsmParser::Delimiter::Paren, [&]() {
        return parser.parseType(resultTypes.emplace_back());
      }))
    return failure();
  result.addTypes(resultTypes);
  if (parser.parseOptionalAttrDictWithKeyword(result.attributes))
    return failure();
  Region *body = result.addRegion();
  return parser.parseRegion(*body, args);
}

void FusionOp::print(OpAsmPrinter &p) {
  p << " " << stringifyFusionKind(getKind()) << " (";
  llvm::interleaveComma(llvm::zip(getBodyBlock().getArguments(), getInputs()), p,
                        [&](auto pair) {
                          auto [arg, input] = pair;
                          p << arg << " = " << input << " : " << input.getType();
                        });
  p << ") -> (";
  llvm::interleaveComma(getResultTypes(), p);
  p << ")";
  p.printOptionalAttrDictWithKeyword((*this)->getAttrs(), {"kind"});
  p << " ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false, /*printBlockTerminators=*/true);
}

LogicalResult FusionOp::verify() {
  if (getNumResults() == 0)
    return emitOpError("has no results (a group that writes nothing is dead)");
  bool matmul = getKind() == FusionKind::MatmulEpilogue;
  if (!matmul && (getEpilogueAttr() || getAlphaAttr() || getAccumulate() || getGeluAux()))
    return emitOpError("epilogue, alpha, accumulate and gelu_aux belong to "
                       "matmul_epilogue fusions only");
  if (auto epilogue = getEpilogueAttr()) {
    StringRef e = epilogue.getValue();
    if (e != "none" && e != "bias" && e != "gelu" && e != "bias_gelu")
      return emitOpError() << "unknown epilogue '" << e
                           << "' (none, bias, gelu or bias_gelu)";
    if (getGeluAux() && e != "gelu" && e != "bias_gelu")
      return emitOpError("gelu_aux needs a gelu epilogue");
  } else if (getGeluAux()) {
    return emitOpError("gelu_aux needs a gelu epilogue");
  }
  return success();
}

LogicalResult FusionOp::verifyRegions() {
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getNumOperands())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments for " << getNumOperands() << " operands";
  for (auto [i, arg, input] : llvm::enumerate(body.getArguments(), getInputs()))
    if (arg.getType() != input.getType())
      return emitOpError() << "body argument " << i << " has type " << arg.getType()
                           << " but operand " << i << " has type " << input.getType();
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in trc.yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "yields " << yield.getNumOperands()
                         << " values whose types do not match its "
                         << getNumResults() << " results";

  int64_t reductions = 0, products = 0;
  for (Operation &op : body.without_terminator()) {
    if (isa<FusionOp>(op))
      return op.emitOpError("may not be nested in another trc.fusion");
    if (!isa<TrcDialect>(op.getDialect()) || isa<ParameterOp, GetParameterOp>(op))
      return op.emitOpError("is not allowed in a trc.fusion (core and composite "
                            "trc ops only)");
    if (isa<ReduceOp, SoftmaxOp, LogSoftmaxOp, LayerNormOp, CrossEntropyOp>(op))
      ++reductions;
    if (isa<DotGeneralOp>(op))
      ++products;
  }
  switch (getKind()) {
  case FusionKind::Elementwise:
    if (reductions || products)
      return emitOpError("of kind elementwise holds a reduction or a matrix product");
    break;
  case FusionKind::Reduction:
    if (!reductions)
      return emitOpError("of kind reduction holds no reduction");
    if (products)
      return emitOpError("of kind reduction holds a matrix product");
    break;
  case FusionKind::MatmulEpilogue:
    if (products != 1)
      return emitOpError() << "of kind matmul_epilogue holds " << products
                           << " matrix products (exactly one expected)";
    if (reductions)
      return emitOpError("of kind matmul_epilogue holds a reduction");
    break;
  }
  return success();
}
