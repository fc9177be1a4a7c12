//===- ModelState.cpp - the model's state, whichever engine holds it ------===//
#include "runtime/train/ModelState.h"

#include "runtime/artifact/Session.h"
#include "runtime/support/Names.h"
#include "runtime/train/DistributedRun.h"
#include "runtime/train/PipelineExecutor.h"
#include "trc/Abi/SlotNames.h"

namespace trc::rt {
namespace {

/// One program's state: its parameter slots and its state inputs
/// (optimizer state, gradient accumulators), read whole by every rank.
class SessionState final : public ModelState {
public:
  SessionState(Session &session, DistributedRun &dist) : session_(session), dist_(dist) {}

  StatusOr<std::vector<NamedTensor>> read(StateParts parts) override {
    std::vector<NamedTensor> out;
    for (const Slot *slot : slots(parts)) {
      StatusOr<HostTensor> value = dist_.readFull(session_, *slot);
      if (!value.ok())
        return value.status();
      out.push_back({slot->name, *std::move(value)});
    }
    return out;
  }

  Status write(const FindTensor &find, StateParts parts) override {
    for (const Slot *slot : slots(parts)) {
      const HostTensor *value = find(slot->name);
      // A step's first micro-step restarts its accumulators (trc.keep_accum
      // 0): a checkpoint of a run without accumulation has none to give.
      if (!value && abi::isAccumulatorSlot(slot->name))
        continue;
      if (!value)
        return Status::error("the checkpoint has no tensor '" + percentEncode(slot->name) +
                             "' (a checkpoint of another model?)");
      if (Status s = dist_.writeFull(session_, *slot, *value); !s)
        return s;
    }
    return Status::success();
  }

private:
  /// Parameters: those training changes (trainable, or given a new value by
  /// the step besides: an "update:" output for a frozen parameter, batch
  /// normalization's running statistics); with the optimizer: every
  /// parameter and state input.
  std::vector<const Slot *> slots(StateParts parts) const {
    const Manifest &m = session_.manifest();
    std::vector<const Slot *> out;
    for (const Slot &s : m.slots) {
      bool param = s.kind == SlotKind::Param;
      bool changes =
          param && (s.trainable ||
                    m.find(SlotKind::Output, std::string(abi::kUpdatePrefix) + s.name) != nullptr);
      bool state = s.kind == SlotKind::Input && abi::isStateSlot(s.name);
      if (parts == StateParts::Parameters ? changes : param || state)
        out.push_back(&s);
    }
    return out;
  }

  Session &session_;
  DistributedRun &dist_;
};

class PipelineState final : public ModelState {
public:
  explicit PipelineState(PipelineExecutor &pipeline) : pipeline_(pipeline) {}
  StatusOr<std::vector<NamedTensor>> read(StateParts parts) override {
    return pipeline_.gatherState(parts);
  }
  Status write(const FindTensor &find, StateParts parts) override {
    return pipeline_.writeState(find, parts);
  }

private:
  PipelineExecutor &pipeline_;
};

} // namespace

std::unique_ptr<ModelState> sessionState(Session &session, DistributedRun &dist) {
  return std::make_unique<SessionState>(session, dist);
}

std::unique_ptr<ModelState> pipelineState(PipelineExecutor &pipeline) {
  return std::make_unique<PipelineState>(pipeline);
}

} // namespace trc::rt
