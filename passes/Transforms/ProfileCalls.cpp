//===- ProfileCalls.cpp - trc-profile-calls ----------------------------------===//
//
// Brackets @main's calls of outlined loop nests and of the runtime's matrix
// products with trc_rt_profile_begin/end(id) and records the spans' names
// on the module (see Passes.td). Preconditions: bufferized IR after
// trc-outline-loop-nests and trc-matmul-to-runtime-call, before the
// conversion to LLVM; run once.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"
#include "trc/Abi/ProfileSpans.h"
#include "trc/Analysis/ValueFacts.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include <map>
#include <tuple>

namespace trc {
#define GEN_PASS_DEF_PROFILECALLS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {

using trc::analysis::nodeOf;

/// The ONNX op type of a node name ("/blocks.0/ln_1/LayerNormalization" ->
/// "LayerNormalization"; exporters name nodes <scope>/<OpType>[_N]).
std::string opTypeOf(llvm::StringRef node) {
  llvm::StringRef last = node.rsplit('/').second.empty() ? node : node.rsplit('/').second;
  auto [type, suffix] = last.rsplit('_');
  bool numbered = !suffix.empty() && llvm::all_of(suffix, llvm::isDigit);
  return (numbered ? type : last).str();
}

func::FuncOp declareHook(ModuleOp module, StringRef name) {
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto fn = func::FuncOp::create(b, module.getLoc(), name,
                                 b.getFunctionType({b.getI64Type()}, {}));
  fn.setPrivate();
  return fn;
}

struct ProfileCalls : trc::impl::ProfileCallsBase<ProfileCalls> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto main = module.lookupSymbol<func::FuncOp>("main");
    if (!main || main.isExternal())
      return;
    if (module->hasAttr(trc::abi::kProfileSpansAttr)) {
      module.emitError("trc-profile-calls has run on this module already");
      return signalPassFailure();
    }
    SmallVector<func::CallOp> calls;
    main.walk([&](func::CallOp call) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      bool nest = callee && !callee.isExternal() && callee.isPrivate();
      bool blas = call.getCallee().starts_with("trc_rt_matmul");
      if (nest || blas)
        calls.push_back(call);
    });
    if (calls.empty())
      return;
    func::FuncOp begin = declareHook(module, trc::abi::kProfileBegin);
    func::FuncOp end = declareHook(module, trc::abi::kProfileEnd);
    // One id per (name, node, function): calls of one nest for one node
    // share it.
    using Key = std::tuple<std::string, std::string, std::string>; // name, node, callee
    std::map<Key, int64_t> ids;
    std::vector<Key> order;
    OpBuilder b(module.getContext());
    for (func::CallOp call : calls) {
      std::string node = nodeOf(call.getLoc());
      bool blas = call.getCallee().starts_with("trc_rt_matmul");
      std::string type = node.empty() ? std::string(blas ? "MatMul" : "other") : opTypeOf(node);
      std::string name = type + (blas ? " (blas)" : " (loop)");
      auto key = std::make_tuple(name, node, call.getCallee().str());
      auto [it, added] = ids.insert({key, int64_t(order.size())});
      if (added)
        order.push_back(key);
      int64_t id = it->second;
      b.setInsertionPoint(call);
      Value idValue = arith::ConstantIntOp::create(b, call.getLoc(), id, 64);
      func::CallOp::create(b, call.getLoc(), begin, ValueRange{idValue});
      b.setInsertionPointAfter(call);
      func::CallOp::create(b, call.getLoc(), end, ValueRange{idValue});
    }
    SmallVector<Attribute> spans;
    for (const Key &key : order) {
      auto &[name, node, callee] = key;
      spans.push_back(b.getArrayAttr(
          {b.getStringAttr(name), b.getStringAttr(node), b.getStringAttr(callee)}));
    }
    module->setAttr(trc::abi::kProfileSpansAttr, b.getArrayAttr(spans));
  }
};

} // namespace
