//===- MatrixOps.cpp - MatMul, Gemm, Einsum -> trc.dot_general ---------------===//
//
// All three become trc.dot_general plus transposes, reshapes and broadcasts.
// A linear layer ([B, T, K] x [K, N]) stays one dot_general without
// broadcasting the weight over the batch.
//
//===----------------------------------------------------------------------===//
#include "../HandlerRegistry.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

#include <cctype>
#include <map>

using namespace mlir;

namespace trc::import {
namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

LogicalResult importMatMul(ImportContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  auto ta = typeOf(a), tb = typeOf(b);
  if (ta.getRank() == 0 || tb.getRank() == 0)
    return ctx.fail("MatMul operands must have rank >= 1, got ",
                    shapeString(ta.getShape()), " and ", shapeString(tb.getShape()));
  // Numpy: a 1-D lhs is a row vector, a 1-D rhs a column vector; both are
  // squeezed out of the result.
  bool squeezeRow = ta.getRank() == 1, squeezeCol = tb.getRank() == 1;
  if (squeezeRow)
    a = ctx.reshape(a, {1, ta.getDimSize(0)});
  if (squeezeCol)
    b = ctx.reshape(b, {tb.getDimSize(0), 1});
  ta = typeOf(a);
  tb = typeOf(b);
  int64_t k = ta.getShape().back();
  if (k != tb.getShape()[tb.getRank() - 2])
    return ctx.fail("MatMul operands ", shapeString(ta.getShape()), " and ",
                    shapeString(tb.getShape()), " have different inner dimensions");

  Type elem = ta.getElementType();
  auto batchA = ta.getShape().drop_back(2), batchB = tb.getShape().drop_back(2);
  int64_t m = ta.getShape()[ta.getRank() - 2], n = tb.getShape().back();
  SmallVector<int64_t> resultShape;
  Value product;
  if (batchB.empty()) {
    // [batch..., M, K] x [K, N]: contract a's last dim with b's first.
    resultShape.append(ta.getShape().begin(), ta.getShape().end() - 1);
    resultShape.push_back(n);
    product = ctx.build<DotGeneralOp>(RankedTensorType::get(resultShape, elem), a, b,
                                      ArrayRef<int64_t>{}, ArrayRef<int64_t>{},
                                      ArrayRef<int64_t>{ta.getRank() - 1},
                                      ArrayRef<int64_t>{0});
  } else {
    auto batch = ctx.broadcastShape(batchA, batchB);
    if (!batch)
      return failure();
    SmallVector<int64_t> shapeA(*batch), shapeB(*batch);
    shapeA.append({m, k});
    shapeB.append({k, n});
    a = ctx.broadcastTo(a, shapeA);
    b = ctx.broadcastTo(b, shapeB);
    if (!a || !b)
      return failure();
    int64_t nb = static_cast<int64_t>(batch->size());
    SmallVector<int64_t> batchDims = llvm::to_vector(llvm::seq<int64_t>(0, nb));
    resultShape.append(*batch);
    resultShape.append({m, n});
    product = ctx.build<DotGeneralOp>(RankedTensorType::get(resultShape, elem), a, b,
                                      batchDims, batchDims, ArrayRef<int64_t>{nb + 1},
                                      ArrayRef<int64_t>{nb});
  }
  if (!product)
    return failure();
  if (squeezeRow || squeezeCol) {
    SmallVector<int64_t> squeezed(resultShape.begin(), resultShape.end() - 2);
    if (!squeezeRow)
      squeezed.push_back(m);
    if (!squeezeCol)
      squeezed.push_back(n);
    product = ctx.reshape(product, squeezed);
  }
  return ctx.setOutput(0, product);
}

LogicalResult importGemm(ImportContext &ctx) {
  Value a = ctx.input(0), b = ctx.input(1);
  if (!a || !b)
    return failure();
  auto ta = typeOf(a), tb = typeOf(b);
  if (ta.getRank() != 2 || tb.getRank() != 2)
    return ctx.fail("Gemm needs 2-D A and B, got ", shapeString(ta.getShape()), " and ",
                    shapeString(tb.getShape()));
  int64_t transA = ctx.intAttr("transA", 0), transB = ctx.intAttr("transB", 0);
  int64_t m = ta.getDimSize(transA ? 1 : 0), n = tb.getDimSize(transB ? 0 : 1);
  Type elem = ta.getElementType();
  Value y = ctx.build<DotGeneralOp>(
      RankedTensorType::get({m, n}, elem), a, b, ArrayRef<int64_t>{},
      ArrayRef<int64_t>{}, ArrayRef<int64_t>{transA ? 0 : 1},
      ArrayRef<int64_t>{transB ? 1 : 0});
  if (!y)
    return failure();
  auto resultType = RankedTensorType::get({m, n}, elem);
  float alpha = ctx.floatAttr("alpha", 1.0f), beta = ctx.floatAttr("beta", 1.0f);
  if (alpha != 1.0f)
    y = ctx.build<MulOp>(y, ctx.splat(resultType, alpha));
  if (y && ctx.hasInput(2) && beta != 0.0f) {
    Value c = ctx.broadcastTo(ctx.input(2), {m, n});
    if (c && beta != 1.0f)
      c = ctx.build<MulOp>(c, ctx.splat(resultType, beta));
    y = c ? ctx.build<AddOp>(y, c) : Value();
  }
  return ctx.setOutput(0, y);
}

// One Einsum operand: its subscript letters, with "..." expanded to
// upper-case placeholder letters that cannot clash with user letters.
std::optional<std::string> expandSubscripts(ImportContext &ctx, llvm::StringRef term,
                                            int64_t rank, int64_t &ellipsisRank) {
  std::string out;
  size_t dots = term.find("...");
  std::string named = term.str();
  if (dots != llvm::StringRef::npos)
    named.erase(dots, 3);
  for (char c : named)
    if (!std::isalpha(static_cast<unsigned char>(c))) {
      (void)ctx.fail("bad subscript '", std::string(1, c), "' in equation");
      return std::nullopt;
    }
  int64_t ell = rank - static_cast<int64_t>(named.size());
  if (dots == llvm::StringRef::npos ? ell != 0 : ell < 0) {
    (void)ctx.fail("subscripts '", term.str(), "' do not match an operand of rank ",
                   rank);
    return std::nullopt;
  }
  if (dots != llvm::StringRef::npos) {
    if (ellipsisRank >= 0 && ellipsisRank != ell) {
      (void)ctx.fail("'...' stands for different ranks in different operands");
      return std::nullopt;
    }
    ellipsisRank = ell;
  }
  std::string ellipsis;
  for (int64_t i = 0; i < ell; ++i)
    ellipsis += static_cast<char>('0' + i); // digits: placeholders for '...'
  out = named;
  if (dots != llvm::StringRef::npos)
    out.insert(dots, ellipsis);
  return out;
}

LogicalResult importEinsum(ImportContext &ctx) {
  std::string equation;
  for (char c : ctx.stringAttr("equation", ""))
    if (c != ' ')
      equation += c;
  auto [lhsText, rhsText] = llvm::StringRef(equation).split("->");
  SmallVector<llvm::StringRef> terms;
  lhsText.split(terms, ',');
  if (static_cast<int>(terms.size()) != ctx.numInputs() || terms.size() > 2)
    return ctx.fail("equation '", equation, "' has ", terms.size(),
                    " operands; trc imports Einsum with 1 or 2 inputs matching it");

  SmallVector<Value> operands;
  SmallVector<std::string> subs;
  int64_t ellipsisRank = -1;
  for (int i = 0; i < ctx.numInputs(); ++i) {
    Value v = ctx.input(i);
    if (!v)
      return failure();
    auto s = expandSubscripts(ctx, terms[i], typeOf(v).getRank(), ellipsisRank);
    if (!s)
      return failure();
    llvm::StringSet<> seen;
    for (char c : *s)
      if (!seen.insert(llvm::StringRef(&c, 1)).second)
        return ctx.unsupported("repeated subscript '", std::string(1, c),
                        "' in one operand (diagonals) is not supported");
    operands.push_back(v);
    subs.push_back(*s);
  }
  std::string out;
  if (equation.find("->") != std::string::npos) {
    int64_t ell = std::max<int64_t>(ellipsisRank, 0);
    auto s = expandSubscripts(ctx, rhsText, static_cast<int64_t>(rhsText.size()) -
                                                (rhsText.contains("...") ? 3 : 0) + ell,
                              ellipsisRank);
    if (!s)
      return failure();
    out = *s;
  } else {
    // Implicit output: the ellipsis, then letters seen once, alphabetically.
    std::map<char, int> count;
    for (auto &s : subs)
      for (char c : s)
        ++count[c];
    for (auto &[c, n] : count)
      if (std::isdigit(static_cast<unsigned char>(c)))
        out += c;
    for (auto &[c, n] : count)
      if (n == 1 && !std::isdigit(static_cast<unsigned char>(c)))
        out += c;
  }

  auto sizeOf = [&](char c) -> int64_t {
    for (size_t i = 0; i < subs.size(); ++i)
      if (auto p = subs[i].find(c); p != std::string::npos)
        return typeOf(operands[i]).getDimSize(p);
    return -1;
  };
  for (char c : out)
    if (sizeOf(c) < 0)
      return ctx.fail("output subscript '", std::string(1, c), "' is in no operand");
  for (size_t i = 0; i < subs.size(); ++i)
    for (size_t j = 0; j < subs[i].size(); ++j)
      if (typeOf(operands[i]).getDimSize(j) != sizeOf(subs[i][j]))
        return ctx.fail("subscript '", std::string(1, subs[i][j]),
                        "' has different sizes in different operands");

  // Sum away letters that appear in one operand only and not in the output.
  auto keepLetter = [&](char c, size_t self) {
    if (out.find(c) != std::string::npos)
      return true;
    for (size_t i = 0; i < subs.size(); ++i)
      if (i != self && subs[i].find(c) != std::string::npos)
        return true;
    return false;
  };
  for (size_t i = 0; i < subs.size(); ++i) {
    SmallVector<int64_t> dims, kept;
    std::string remaining;
    for (size_t j = 0; j < subs[i].size(); ++j) {
      if (keepLetter(subs[i][j], i)) {
        remaining += subs[i][j];
        kept.push_back(typeOf(operands[i]).getDimSize(j));
      } else {
        dims.push_back(static_cast<int64_t>(j));
      }
    }
    if (dims.empty())
      continue;
    operands[i] = ctx.build<ReduceOp>(
        RankedTensorType::get(kept, typeOf(operands[i]).getElementType()),
        ReduceKind::Sum, operands[i], dims);
    if (!operands[i])
      return failure();
    subs[i] = remaining;
  }

  Value result;
  std::string resultSubs;
  if (subs.size() == 1) {
    result = operands[0];
    resultSubs = subs[0];
  } else {
    SmallVector<int64_t> lb, rb, lc, rc, shape;
    for (size_t j = 0; j < subs[0].size(); ++j) {
      char c = subs[0][j];
      size_t p = subs[1].find(c);
      if (p == std::string::npos)
        continue;
      bool inOut = out.find(c) != std::string::npos;
      (inOut ? lb : lc).push_back(static_cast<int64_t>(j));
      (inOut ? rb : rc).push_back(static_cast<int64_t>(p));
      if (inOut) {
        resultSubs += c;
        shape.push_back(sizeOf(c));
      }
    }
    for (int side = 0; side < 2; ++side)
      for (char c : subs[side])
        if (subs[1 - side].find(c) == std::string::npos) {
          resultSubs += c;
          shape.push_back(sizeOf(c));
        }
    result = ctx.build<DotGeneralOp>(
        RankedTensorType::get(shape, typeOf(operands[0]).getElementType()),
        operands[0], operands[1], lb, rb, lc, rc);
    if (!result)
      return failure();
  }
  // Reorder to the output's subscripts.
  SmallVector<int64_t> perm, shape;
  for (char c : out) {
    perm.push_back(static_cast<int64_t>(resultSubs.find(c)));
    shape.push_back(sizeOf(c));
  }
  if (perm.size() != resultSubs.size())
    return ctx.fail("output subscripts '", out, "' do not match the operands");
  result = ctx.build<TransposeOp>(
      RankedTensorType::get(shape, typeOf(result).getElementType()), result, perm);
  return ctx.setOutput(0, result);
}

} // namespace

void registerMatrixHandlers(HandlerRegistry &r) {
  r.add("MatMul", 1, importMatMul);
  r.add("Gemm", 7, importGemm);
  r.add("Einsum", 12, importEinsum);
}

} // namespace trc::import
