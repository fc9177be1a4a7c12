//===- Report.h - a search's result as trc-plan prints it -------*- C++ -*-===//
//
// trc-plan's output (its --help says what each line means): the model, the
// cluster, the search, the best plan with its prediction and the best plan
// of up to K other data x tensor x pipeline x recomputation layouts, as
// text or as one JSON object {"plan", "layout", "predicted", "alternatives",
// "search", "model"}; and the error when nothing fits. Plain data in, text
// out.
//
//===----------------------------------------------------------------------===//
#ifndef TRC_PLAN_REPORT_H
#define TRC_PLAN_REPORT_H

#include "trc/Plan/Cluster.h"
#include "trc/Plan/Model.h"
#include "trc/Plan/Search.h"

#include <string>

namespace trc::plan {

// The model as the report describes it.
struct ReportedModel {
  GptModel shape;             // what the formulas priced (a gpt:/llama: spec, or derived)
  std::string derivedSpec;    // an .onnx model's derived spec ("": none, or a gpt: spec given)
  std::string path;           // the .onnx model ("" for a spec)
  std::string notTransformer; // an .onnx model without a shape: why ("" otherwise)
  double countedParams = 0;   // what an .onnx model holds
  bool shaped() const { return notTransformer.empty(); }
};

// Precondition: result.ranked is not empty.
std::string reportText(const ReportedModel &model, const Cluster &cluster, long long globalBatch,
                       const SearchResult &result, int alternatives);
std::string reportJson(const ReportedModel &model, const Cluster &cluster,
                       const SearchResult &result, int alternatives);

// Why nothing fits (result.ranked empty): the least memory a plan needed
// against the device's, or why no candidate was left.
std::string noPlanMessage(const ReportedModel &model, const Cluster &cluster,
                          long long globalBatch, const SearchResult &result, bool constrained);

} // namespace trc::plan

#endif // TRC_PLAN_REPORT_H
