//===- HandlerRegistry.cpp - ONNX op handlers by op type and opset ---------===//
#include "HandlerRegistry.h"

#include <algorithm>

namespace trc::import {

const HandlerRegistry &HandlerRegistry::get() {
  static const HandlerRegistry registry = [] {
    HandlerRegistry r;
    registerElementwiseHandlers(r);
    registerMatrixHandlers(r);
    registerNormalizationHandlers(r);
    registerLossHandlers(r);
    registerShapeHandlers(r);
    registerPadHandlers(r);
    registerRotaryHandlers(r);
    registerAttentionHandlers(r);
    registerConstantHandlers(r);
    registerReductionHandlers(r);
    registerTrainingHandlers(r);
    registerIndexingHandlers(r);
    registerPoolingHandlers(r);
    registerConvHandlers(r);
    registerResizeHandlers(r);
    registerActivationHandlers(r);
    registerSequenceHandlers(r);
    registerControlFlowHandlers(r);
    return r;
  }();
  return registry;
}

std::string HandlerRegistry::key(llvm::StringRef domain, llvm::StringRef opType) {
  if (domain.empty() || domain == "ai.onnx")
    return opType.str();
  return (domain + "::" + opType).str();
}

bool HandlerRegistry::knowsDomain(llvm::StringRef domain) const {
  if (domain.empty() || domain == "ai.onnx")
    return true;
  std::string prefix = (domain + "::").str();
  for (const auto &entry : handlers_)
    if (entry.getKey().starts_with(prefix))
      return true;
  return false;
}

void HandlerRegistry::add(llvm::StringRef opType, int64_t sinceVersion,
                          OpHandler handler) {
  auto &entries = handlers_[opType];
  entries.push_back({sinceVersion, handler});
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.sinceVersion < b.sinceVersion; });
}

OpHandler HandlerRegistry::lookup(llvm::StringRef opType, int64_t opset) const {
  auto it = handlers_.find(opType);
  if (it == handlers_.end())
    return nullptr;
  OpHandler found = nullptr;
  for (const Entry &e : it->second)
    if (e.sinceVersion <= opset)
      found = e.handler;
  return found;
}

std::vector<std::string> HandlerRegistry::opTypes() const {
  std::vector<std::string> names;
  for (const auto &entry : handlers_)
    names.push_back(entry.getKey().str());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace trc::import
