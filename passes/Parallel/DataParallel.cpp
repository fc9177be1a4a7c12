//===- DataParallel.cpp - trc-data-parallel ---------------------------------===//
//
// Makes @main_grad data parallel (see Passes.td): every rank computes the
// loss and gradients of its rows of the global batch; this pass averages
// them over the ranks with collectives the runtime's communicators carry out.
//   * Gradients are reduced in buckets of at most bucket-mb MiB, grouped in
//     the order the backward pass produces them, each bucket placed right
//     after its last gradient is computed (so on a GPU it overlaps the rest
//     of the backward pass).
//   * zero-stage 0: all-reduce (average) over the world; gradients keep
//     their shapes.
//   * zero-stage 1, 2 and 3: reduce-scatter over the shard group (the
//     bucket laid out rank-major, so each rank receives its shard of every
//     gradient), then, with `hybrid`, an all-reduce over the replica group.
//     Stages 1 and 2 compile alike: inside one compiled step a full gradient
//     only ever exists until its bucket is reduced, so keeping the shard
//     (ZeRO-2) costs nothing over ZeRO-1's full reduction and halves its
//     traffic (reduce-scatter + all-gather = one all-reduce).
//   * zero-stage 3 also shards the trainable parameters: @main_grad takes
//     this rank's shard, and each use all-gathers the full tensor right
//     before it (so it is freed after its use and the backward pass
//     gathers again). Layout ops between a parameter and its users (the
//     importer transposes weight matrices once at entry) are cloned per
//     use, so a matrix is not gathered once and kept for the whole step.
//   * Context parallelism (trc-partition) returns each gradient as a sum
//     over the context axis of the ranks' partial gradients. Those sums are
//     folded into the buckets: parameters are replicated over data and
//     context, so one all-reduce over data x context (or, with ZeRO, the
//     reduce-scatter over the shard group and the average over replicas,
//     which split data x context) averages over both; times C it sums the
//     context parts and averages the data copies. A bucket holds gradients
//     of one kind only.
//   * The loss is averaged over the world, and so are frozen parameters' new
//     values (`trc.update` results: running statistics of each rank's rows).
// Shards follow include/trc/Training/Sharding.h and are marked with its
// attributes, which trc-build-train-step and the artifact's manifest read.
// Preconditions: @main_grad as trc-autodiff writes it (loss first, then
// gradients with `trc.grad_of`), before trc-build-train-step.
//
//===----------------------------------------------------------------------===//
#include "trc/Abi/AttrNames.h"
#include "trc/Passes.h"
#include "trc/Analysis/ElementBytes.h"
#include "trc/Parallel/Sharding.h"
#include "trc/Training/Sharding.h"
#include "trc/Training/Vjp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSet.h"

namespace trc {
#define GEN_PASS_DEF_DATAPARALLEL
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;
using namespace trc::training;

namespace {

struct Gradient {
  unsigned result;      // index in @main_grad's results
  int64_t ready;        // position of its defining op in the body (-1: an argument)
  Operation *producer;  // null for an argument
  RankedTensorType type;
  Value value;          // what the bucket reduces
  bool contextPartial;  // `value` is this rank's part of a sum over the context axis
};

struct DataParallel : trc::impl::DataParallelBase<DataParallel> {
  using DataParallelBase::DataParallelBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grad = module.lookupSymbol<func::FuncOp>("main_grad");
    if (!grad) {
      module.emitError("trc-data-parallel needs @main_grad (run trc-autodiff first)");
      return signalPassFailure();
    }
    if (zeroStage < 0 || zeroStage > 3) {
      module.emitError("trc-data-parallel: zero-stage must be 0, 1, 2 or 3, got ")
          << static_cast<long long>(zeroStage);
      return signalPassFailure();
    }
    if (shardDegree < 1) {
      module.emitError("trc-data-parallel: shard-degree must be at least 1, got ")
          << static_cast<long long>(shardDegree);
      return signalPassFailure();
    }
    if (!(bucketMb > 0)) {
      module.emitError("trc-data-parallel: bucket-mb must be positive, got ")
          << static_cast<double>(bucketMb);
      return signalPassFailure();
    }
    Block &body = grad.front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body.getOperations()))
      position[&op] = static_cast<int64_t>(i);

    SmallVector<Gradient> gradients;
    SmallVector<Operation *> contextSums;
    for (unsigned r = 1; r < grad.getNumResults(); ++r) {
      if (!grad.getResultAttr(r, trc::abi::kGradOfAttr))
        continue;
      Value g = ret.getOperand(r);
      Value part = trc::parallel::contextSummand(g);
      Value value = part ? part : g;
      if (part)
        contextSums.push_back(g.getDefiningOp());
      Operation *producer = value.getDefiningOp();
      gradients.push_back({r, producer ? position[producer] : -1, producer,
                           cast<RankedTensorType>(g.getType()), value, bool(part)});
    }
    contextDegree = trc::parallel::Grid::read(module).size(trc::parallel::kContextAxis);
    llvm::stable_sort(gradients, [](const Gradient &a, const Gradient &b) {
      return a.ready < b.ready;
    });
    for (const auto &bucket : buckets(gradients))
      reduceBucket(grad, ret, bucket);
    // The per-gradient context sums the buckets replaced.
    for (Operation *sum : contextSums)
      if (sum->use_empty())
        sum->erase();

    OpBuilder b(ret);
    Value loss = ret.getOperand(0);
    ret.setOperand(0, b.create<trc::AllReduceOp>(ret.getLoc(), loss,
                                                 trc::CollectiveReduction::Avg,
                                                 trc::CollectiveGroup::World));
    // Frozen parameters' new values (running statistics of each rank's
    // batch) are averaged so that the replicas stay equal.
    for (unsigned r = 1; r < grad.getNumResults(); ++r)
      if (grad.getResultAttr(r, trc::abi::kUpdateAttr))
        ret.setOperand(r, b.create<trc::AllReduceOp>(ret.getLoc(), ret.getOperand(r),
                                                     trc::CollectiveReduction::Avg,
                                                     trc::CollectiveGroup::World));
    if (zeroStage == 3)
      shardParameters(grad);
    grad.setType(FunctionType::get(grad.getContext(), body.getArgumentTypes(),
                                   ret.getOperandTypes()));
  }

  int64_t contextDegree = 1;

  int64_t shards() const { return zeroStage == 0 ? 1 : shardDegree; }

  /// Consecutive gradients (in the order they are ready) of one element
  /// type and kind (context parts or not), at most bucket-mb MiB each (a
  /// larger gradient is a bucket alone).
  SmallVector<SmallVector<Gradient>> buckets(ArrayRef<Gradient> gradients) const {
    double capBytes = bucketMb * 1024.0 * 1024.0;
    SmallVector<SmallVector<Gradient>> out;
    llvm::MapVector<std::pair<Type, unsigned>, std::pair<SmallVector<Gradient>, double>> open;
    for (const Gradient &g : gradients) {
      Type element = g.type.getElementType();
      double bytes = double(shards() * shardElements(g.type.getNumElements(), shards())) *
                     double(trc::elementBytes(element));
      auto &[members, size] = open[{element, unsigned(g.contextPartial)}];
      if (!members.empty() && size + bytes > capBytes) {
        out.push_back(std::move(members));
        members.clear();
        size = 0;
      }
      members.push_back(g);
      size += bytes;
    }
    for (auto &[element, entry] : open)
      if (!entry.first.empty())
        out.push_back(std::move(entry.first));
    // Issue order: by the last gradient each bucket waits for.
    llvm::stable_sort(out, [](const auto &a, const auto &b) {
      return a.back().ready < b.back().ready;
    });
    return out;
  }

  void reduceBucket(func::FuncOp grad, func::ReturnOp ret, ArrayRef<Gradient> bucket) {
    Block &body = grad.front();
    const Gradient &last = bucket.back();
    OpBuilder b(grad.getContext());
    if (last.producer)
      b.setInsertionPointAfter(last.producer);
    else
      b.setInsertionPointToStart(&body);
    Location loc = last.producer ? last.producer->getLoc() : grad.getLoc();
    Type element = last.type.getElementType();
    int64_t g = shards();
    const bool contextParts = last.contextPartial;

    if (zeroStage == 0) {
      // One flat vector of the bucket, averaged over every rank (context
      // parts: averaged over data x context, times C = summed over the
      // context axis, averaged over the data axis).
      SmallVector<Value> flats;
      int64_t total = 0;
      for (const Gradient &gr : bucket) {
        int64_t n = gr.type.getNumElements();
        flats.push_back(reshapeTo(b, loc, gr.value, RankedTensorType::get({n}, element)));
        total += n;
      }
      Value flat = concatenate(b, loc, flats, RankedTensorType::get({total}, element), 0);
      Value reduced = b.create<trc::AllReduceOp>(
          loc, flat, trc::CollectiveReduction::Avg,
          contextParts ? trc::CollectiveGroup::DataContext : trc::CollectiveGroup::World);
      if (contextParts)
        reduced = trc::autodiff::VjpBuilder(b, loc).scale(reduced, double(contextDegree));
      int64_t offset = 0;
      for (const Gradient &gr : bucket) {
        int64_t n = gr.type.getNumElements();
        Value part = slice1d(b, loc, reduced, offset, n);
        offset += n;
        setResult(grad, ret, gr, reshapeTo(b, loc, part, gr.type));
      }
      return;
    }
    // Rank-major layout: row i of [g, sum c] holds rank i's shard of each.
    SmallVector<Value> rows;
    int64_t columns = 0;
    for (const Gradient &gr : bucket) {
      int64_t c = shardElements(gr.type.getNumElements(), g);
      Value padded = flattenPadded(b, loc, gr.value, g);
      rows.push_back(reshapeTo(b, loc, padded, RankedTensorType::get({g, c}, element)));
      columns += c;
    }
    Value matrix = concatenate(b, loc, rows, RankedTensorType::get({g, columns}, element), 1);
    Value flat = reshapeTo(b, loc, matrix, RankedTensorType::get({g * columns}, element));
    Value mine = b.create<trc::ReduceScatterOp>(loc, RankedTensorType::get({columns}, element),
                                                flat, trc::CollectiveReduction::Avg,
                                                trc::CollectiveGroup::Shard, g);
    if (hybrid)
      mine = b.create<trc::AllReduceOp>(loc, mine, trc::CollectiveReduction::Avg,
                                        trc::CollectiveGroup::Replica);
    if (contextParts)
      mine = trc::autodiff::VjpBuilder(b, loc).scale(mine, double(contextDegree));
    int64_t offset = 0;
    for (const Gradient &gr : bucket) {
      int64_t c = shardElements(gr.type.getNumElements(), g);
      setResult(grad, ret, gr, slice1d(b, loc, mine, offset, c));
      offset += c;
    }
  }

  static Value concatenate(OpBuilder &b, Location loc, ArrayRef<Value> parts,
                           RankedTensorType type, int64_t dim) {
    if (parts.size() == 1)
      return parts.front();
    return b.create<trc::ConcatenateOp>(loc, type, parts, dim);
  }

  void setResult(func::FuncOp grad, func::ReturnOp ret, const Gradient &gr, Value value) {
    ret.setOperand(gr.result, value);
    if (zeroStage == 0)
      return;
    Builder b(grad.getContext());
    for (const NamedAttribute &attr : shardAttributes(b, gr.type, shards()))
      grad.setResultAttr(gr.result, attr.getName(), attr.getValue());
  }

  /// ZeRO-3: trainable parameters arrive as shards and are gathered at
  /// each use.
  void shardParameters(func::FuncOp grad) {
    llvm::StringSet<> trainable;
    for (unsigned r = 1; r < grad.getNumResults(); ++r)
      if (auto of = grad.getResultAttrOfType<StringAttr>(r, trc::abi::kGradOfAttr))
        trainable.insert(of.getValue());
    shardParameterArguments(grad, trainable, shards());
  }
};
} // namespace
