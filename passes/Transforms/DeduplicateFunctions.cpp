//===- DeduplicateFunctions.cpp - trc-deduplicate-functions ----------------===//
//
// Merges private functions and GPU kernels whose bodies are the same (see
// Passes.td). A transformer's layers run the same loop nests and kernels on
// other buffers: once each is outlined (trc-outline-loop-nests,
// gpu-kernel-outlining) most are copies, and every copy would be optimized,
// compiled and, for CUDA, assembled again. Preconditions: none; only
// private func.func ops and gpu.func ops inside gpu.module ops are merged.
//
//===----------------------------------------------------------------------===//
#include "trc/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AttrTypeSubElements.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"

namespace trc {
#define GEN_PASS_DEF_DEDUPLICATEFUNCTIONS
#include "Passes.h.inc"
} // namespace trc

using namespace mlir;

namespace {
SmallVector<NamedAttribute> attributesButName(FunctionOpInterface fn) {
  SmallVector<NamedAttribute> attrs;
  for (NamedAttribute attr : fn->getAttrs())
    if (attr.getName() != SymbolTable::getSymbolAttrName())
      attrs.push_back(attr);
  return attrs;
}

/// A cheap key that equal functions share: the signature, the attributes
/// other than the name, each body op's name, attributes and result types.
llvm::hash_code functionKey(FunctionOpInterface fn) {
  llvm::hash_code hash = llvm::hash_value(fn.getFunctionType().getAsOpaquePointer());
  for (NamedAttribute attr : attributesButName(fn))
    hash = llvm::hash_combine(hash, attr.getName(), attr.getValue());
  fn.getFunctionBody().walk([&](Operation *op) {
    hash = llvm::hash_combine(hash, op->getName().getAsOpaquePointer(), op->getNumRegions(),
                              op->getAttrDictionary().getAsOpaquePointer());
    for (Type type : op->getResultTypes())
      hash = llvm::hash_combine(hash, type.getAsOpaquePointer());
  });
  return hash;
}

bool sameFunction(FunctionOpInterface a, FunctionOpInterface b) {
  return a->getName() == b->getName() && a.getFunctionType() == b.getFunctionType() &&
         attributesButName(a) == attributesButName(b) &&
         OperationEquivalence::isRegionEquivalentTo(&a.getFunctionBody(), &b.getFunctionBody(),
                                                    OperationEquivalence::IgnoreLocations);
}

struct DeduplicateFunctions : trc::impl::DeduplicateFunctionsBase<DeduplicateFunctions> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // How the module's ops name each copy -> how they name its first.
    llvm::DenseMap<Attribute, Attribute> replacement;
    SmallVector<Operation *> copies;
    SmallVector<FunctionOpInterface> privates;
    for (auto fn : module.getOps<FunctionOpInterface>())
      if (fn.isPrivate() && !fn.isExternal())
        privates.push_back(fn);
    collect(privates, /*scope=*/nullptr, replacement, copies);
    for (auto kernels : module.getOps<gpu::GPUModuleOp>()) {
      SmallVector<FunctionOpInterface> functions;
      for (auto fn : kernels.getOps<gpu::GPUFuncOp>())
        functions.push_back(fn);
      collect(functions, kernels.getSymNameAttr(), replacement, copies);
    }
    if (copies.empty())
      return;

    AttrTypeReplacer replacer;
    replacer.addReplacement([&](SymbolRefAttr ref) -> std::optional<Attribute> {
      auto it = replacement.find(ref);
      if (it == replacement.end())
        return std::nullopt;
      return it->second;
    });
    module.walk([&](Operation *op) {
      replacer.replaceElementsIn(op, /*replaceAttrs=*/true, /*replaceLocs=*/false,
                                 /*replaceTypes=*/false);
    });
    for (Operation *copy : copies)
      copy->erase();
  }

  /// Groups `functions` (of one symbol table: the module, or the gpu.module
  /// named `scope`) by body; all but the first of each group are copies.
  void collect(ArrayRef<FunctionOpInterface> functions, StringAttr scope,
               llvm::DenseMap<Attribute, Attribute> &replacement,
               SmallVector<Operation *> &copies) {
    auto reference = [&](FunctionOpInterface fn) -> SymbolRefAttr {
      auto leaf = FlatSymbolRefAttr::get(fn.getNameAttr());
      return scope ? SymbolRefAttr::get(scope, {leaf}) : leaf;
    };
    llvm::DenseMap<llvm::hash_code, SmallVector<FunctionOpInterface, 1>> firstsByKey;
    for (FunctionOpInterface fn : functions) {
      auto &firsts = firstsByKey[functionKey(fn)];
      auto same =
          llvm::find_if(firsts, [&](FunctionOpInterface first) { return sameFunction(first, fn); });
      if (same == firsts.end()) {
        firsts.push_back(fn);
        continue;
      }
      replacement[reference(fn)] = reference(*same);
      copies.push_back(fn);
    }
  }
};
} // namespace
