//===- Respecialize.cpp - re-deriving a static export's shape constants ---===//
//
// See Respecialize.h. Every rule starts from the traced operand and the shape
// of the data it applied to then and now; a step changes one symbol (traced
// size S becomes S'), so an entry that follows the data scales by how the
// data's dimensions it stands for changed.
//
//===----------------------------------------------------------------------===//
#include "Respecialize.h"

#include <algorithm>
#include <set>

namespace trc::import {
namespace {

using llvm::ArrayRef;
using llvm::SmallVector;

/// Reshape's target at the traced sizes with 0 (copy) and -1 (inferred)
/// resolved against the traced data shape; nullopt when it did not apply.
std::optional<SmallVector<int64_t>> resolveTarget(ArrayRef<int64_t> target,
                                                  ArrayRef<int64_t> data, bool allowZero) {
  SmallVector<int64_t> out;
  int64_t known = 1, inferred = -1, elements = 1;
  for (int64_t d : data)
    elements *= d;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t d = target[i];
    if (d == 0 && !allowZero) {
      if (i >= data.size())
        return std::nullopt;
      d = data[i];
    }
    if (d == -1)
      inferred = static_cast<int64_t>(i);
    else
      known *= d;
    out.push_back(d);
  }
  if (inferred >= 0) {
    if (known == 0 || elements % known)
      return std::nullopt;
    out[inferred] = elements / known;
  }
  return out;
}

/// Groups of dimensions that hold the same elements before and after a
/// reshape: [in0, in1) of `in` is [out0, out1) of `out`, in order.
struct DimGroup {
  size_t in0, in1, out0, out1;
};
std::optional<std::vector<DimGroup>> reshapeGroups(ArrayRef<int64_t> in, ArrayRef<int64_t> out) {
  std::vector<DimGroup> groups;
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    DimGroup g{i, i, j, j};
    int64_t pIn = i < in.size() ? in[i++] : 1;
    int64_t pOut = j < out.size() ? out[j++] : 1;
    if (pIn == 0 || pOut == 0)
      return std::nullopt; // empty tensors: every grouping fits
    while (pIn != pOut) {
      if (pIn < pOut && i < in.size())
        pIn *= in[i++];
      else if (pOut < pIn && j < out.size())
        pOut *= out[j++];
      else
        return std::nullopt;
    }
    g.in1 = i;
    g.out1 = j;
    groups.push_back(g);
  }
  return groups;
}

std::optional<SmallVector<int64_t>> rederiveReshape(const TracedOperand &traced,
                                                    ArrayRef<int64_t> now, RetraceStep step,
                                                    bool allowZero, std::string &why) {
  ArrayRef<int64_t> was = traced.dataShape;
  auto out = resolveTarget(traced.values, was, allowZero);
  if (!out || was.size() != now.size()) {
    why = "its data changed rank";
    return std::nullopt;
  }
  auto groups = reshapeGroups(was, *out);
  if (!groups) {
    why = "its data has an empty dimension";
    return std::nullopt;
  }
  SmallVector<int64_t> result = *out;
  for (const DimGroup &g : *groups) {
    __int128 num = 1, den = 1;
    for (size_t i = g.in0; i < g.in1; ++i) {
      num *= now[i];
      den *= was[i];
    }
    if (num == den)
      continue;
    // Exactly one entry of the group follows the symbol: the one the size
    // divides (the traced size itself first), the outermost of equals.
    std::vector<size_t> fits, divisible, equal;
    for (size_t d = g.out0; d < g.out1; ++d) {
      if (((*out)[d] * num) % den)
        continue;
      fits.push_back(d);
      if ((*out)[d] % step.traced == 0)
        divisible.push_back(d);
      if ((*out)[d] == step.traced)
        equal.push_back(d);
    }
    const std::vector<size_t> &pick =
        fits.size() == 1 ? fits : !equal.empty() ? equal : divisible;
    if (pick.empty()) {
      why = "no entry of its target follows the data's dimensions that changed";
      return std::nullopt;
    }
    result[pick.front()] = static_cast<int64_t>((*out)[pick.front()] * num / den);
  }
  return result;
}

std::optional<SmallVector<int64_t>> rederiveExpand(const TracedOperand &traced,
                                                   ArrayRef<int64_t> now, RetraceStep step,
                                                   std::string &why) {
  ArrayRef<int64_t> was = traced.dataShape;
  SmallVector<int64_t> target = traced.values;
  size_t rank = std::max(was.size(), target.size());
  // Data that has the symbol's dimension already does not gain another by
  // broadcasting; data without one gains it at most once (the outermost).
  bool fresh = was == now;
  for (size_t p = 0; p < rank; ++p) {
    if (p + target.size() < rank)
      continue; // the target has no entry here: the data's dimension stays
    size_t t = p + target.size() - rank;
    bool hasData = p + was.size() >= rank;
    int64_t before = hasData ? was[p + was.size() - rank] : 1;
    int64_t after = hasData ? now[p + now.size() - rank] : 1;
    if (before == after) {
      // A broadcast to a fresh size that is the traced one: it follows it
      // (a [1, T, T] mask expanded to the batch).
      if (fresh && before == 1 && target[t] == step.traced && step.traced != 1) {
        target[t] = step.size;
        fresh = false;
      }
    } else if (target[t] == before) {
      target[t] = after;
    } else if (target[t] != 1) {
      why = "it broadcasts a dimension that changed to another size";
      return std::nullopt;
    }
  }
  return target;
}

std::optional<SmallVector<int64_t>> rederiveSlice(ShapeOperand kind, const TracedOperand &traced,
                                                  ArrayRef<int64_t> now, RetraceStep step,
                                                  ArrayRef<int64_t> axes, bool buffer,
                                                  std::string &why) {
  ArrayRef<int64_t> was = traced.dataShape;
  SmallVector<int64_t> values = traced.values;
  if (axes.size() != values.size() || was.size() != now.size()) {
    why = "its data changed rank";
    return std::nullopt;
  }
  for (size_t k = 0; k < values.size(); ++k) {
    int64_t axis = axes[k], before = was[axis], after = now[axis];
    int64_t &v = values[k];
    if (before == after) {
      // A buffer sliced to the traced size (a causal mask's [:T, :T]).
      if (buffer && kind == ShapeOperand::SliceEnds && v == step.traced && v <= before) {
        if (step.size > before) {
          why = "it slices " + std::to_string(step.size) + " of a dimension of " +
                std::to_string(before) + " (a buffer made for at most that many)";
          return std::nullopt;
        }
        v = step.size;
      }
      continue;
    }
    // The data's axis changed: bounds at its end, or one before it
    // (x[:, :-1], x[:, -1] traced as T-1), follow it; fixed prefixes stay.
    if (v == before)
      v = after;
    else if (v == before - 1 && before > 2)
      v = after - 1;
  }
  return values;
}

std::optional<SmallVector<int64_t>> rederiveTile(const TracedOperand &traced,
                                                 ArrayRef<int64_t> now, RetraceStep step,
                                                 std::string &why) {
  ArrayRef<int64_t> was = traced.dataShape;
  SmallVector<int64_t> repeats = traced.values;
  if (repeats.size() != was.size() || was.size() != now.size()) {
    why = "its data changed rank";
    return std::nullopt;
  }
  // Data without the symbol's dimension that tiles a unit dimension to the
  // traced size gains it there (the outermost such); data that has it keeps
  // its repeats (the output follows the data).
  if (was != now)
    return repeats;
  for (size_t a = 0; a < repeats.size(); ++a)
    if (was[a] == 1 && repeats[a] == step.traced && step.traced != 1) {
      repeats[a] = step.size;
      break;
    }
  return repeats;
}

} // namespace

void rederiveIndices(const TracedOperand &traced, RetraceStep step, SmallVector<int64_t> &values,
                     SmallVector<int64_t> &shape) {
  values = traced.values;
  shape = traced.dataShape;
  if (step.traced == 1)
    return; // a unit axis says neither repeat nor count
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    if (shape[axis] != step.traced)
      continue;
    // Element (outer, k, inner) of the [outer, n, inner] view of the axis.
    int64_t n = shape[axis], inner = 1, outer = 1;
    for (size_t d = axis + 1; d < shape.size(); ++d)
      inner *= shape[d];
    for (size_t d = 0; d < axis; ++d)
      outer *= shape[d];
    auto at = [&](int64_t o, int64_t k, int64_t i) { return values[(o * n + k) * inner + i]; };
    bool repeats = true, counts = true;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < n; ++k)
        for (int64_t i = 0; i < inner; ++i) {
          repeats &= at(o, k, i) == at(o, 0, i);
          counts &= at(o, k, i) == at(o, 0, i) + k;
        }
    if (!repeats && !counts)
      continue;
    SmallVector<int64_t> out;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < step.size; ++k)
        for (int64_t i = 0; i < inner; ++i)
          out.push_back(at(o, 0, i) + (repeats ? 0 : k));
    values = std::move(out);
    shape[axis] = step.size;
    return;
  }
}

std::vector<RetraceStep>
planRetrace(const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> &inputs) {
  std::vector<RetraceStep> steps;
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const auto &[traced, size] : inputs)
    for (size_t i = 0; i < traced.size() && i < size.size(); ++i)
      if (traced[i] != size[i] && seen.insert({traced[i], size[i]}).second)
        steps.push_back({traced[i], size[i]});
  return steps;
}

std::optional<SmallVector<int64_t>> rederive(ShapeOperand kind, const TracedOperand &traced,
                                             ArrayRef<int64_t> dataShape, RetraceStep step,
                                             ArrayRef<int64_t> axes, bool allowZero,
                                             bool buffer, std::string &why) {
  switch (kind) {
  case ShapeOperand::ReshapeTarget:
    if (ArrayRef<int64_t>(traced.dataShape) == dataShape)
      return traced.values;
    return rederiveReshape(traced, dataShape, step, allowZero, why);
  case ShapeOperand::ExpandTarget:
    return rederiveExpand(traced, dataShape, step, why);
  case ShapeOperand::SliceStarts:
  case ShapeOperand::SliceEnds:
    return rederiveSlice(kind, traced, dataShape, step, axes, buffer, why);
  case ShapeOperand::TileRepeats:
    return rederiveTile(traced, dataShape, step, why);
  case ShapeOperand::FillShape: {
    // A fill of rows ([B, T] ones for a mask, [B, 1] start tokens) has the
    // symbol once, outermost; a 1-D fill may be a shape's length: left alone.
    SmallVector<int64_t> shape = traced.values;
    if (shape.size() >= 2 && step.traced != 1)
      for (int64_t &d : shape)
        if (d == step.traced) {
          d = step.size;
          break;
        }
    return shape;
  }
  }
  return traced.values;
}

} // namespace trc::import
