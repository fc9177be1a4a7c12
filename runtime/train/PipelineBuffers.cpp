//===- PipelineBuffers.cpp - per-microbatch buffers of a pipeline rank ----===//
//
// See PipelineBuffers.h.
//
//===----------------------------------------------------------------------===//
#include "runtime/train/PipelineBuffers.h"

#include "trc/Abi/SlotNames.h"

#include "runtime/support/Names.h"

#include <algorithm>

namespace trc::rt {

PipelineBuffers::~PipelineBuffers() {
  if (copies_)
    (void)copies_->drain();
}

PipelineBuffers::SlotPool &PipelineBuffers::pool(const std::string &slot, uint64_t bytes) {
  SlotPool &p = pools_[slot];
  p.bytes = bytes;
  p.stash = abi::hasSlotPrefix(slot, abi::kStashPrefix);
  return p;
}

void PipelineBuffers::countDevice(const SlotPool &pool, int64_t sign) {
  if (!pool.stash)
    return;
  device_ = sign > 0 ? device_ + pool.bytes : device_ - pool.bytes;
  peakDevice_ = std::max(peakDevice_, device_);
}

void PipelineBuffers::countHost(const SlotPool &pool, int64_t sign) {
  host_ = sign > 0 ? host_ + pool.bytes : host_ - pool.bytes;
  peakHost_ = std::max(peakHost_, host_);
}

StatusOr<CopyEngine *> PipelineBuffers::engine() {
  if (!copies_) {
    StatusOr<CopyEngine *> e = backend_.copyEngine();
    if (!e.ok())
      return e.status();
    copies_ = *e;
  }
  return copies_;
}

namespace {

/// A free buffer of `buffers` (device or host), or a new one of `bytes`.
template <typename Buffer>
StatusOr<size_t> takeBuffer(std::vector<Buffer> &buffers, std::vector<size_t> &free,
                            Backend &backend, uint64_t bytes) {
  if (!free.empty()) {
    size_t index = free.back();
    free.pop_back();
    return index;
  }
  buffers.emplace_back();
  if (Status s = buffers.back().allocate(backend, size_t(std::max<uint64_t>(bytes, 1))); !s) {
    buffers.pop_back();
    return s;
  }
  return buffers.size() - 1;
}

} // namespace

StatusOr<size_t> PipelineBuffers::lend(SlotPool &pool, const std::string &slot,
                                       int microbatch) {
  StatusOr<size_t> taken = takeBuffer(pool.buffers, pool.free, backend_, pool.bytes);
  if (!taken.ok())
    return Status(taken.status()).withPrefix("pipeline buffer '" + percentEncode(slot) + "': ");
  size_t index = *taken;
  pool.lent[microbatch] = index;
  countDevice(pool, +1);
  return index;
}

StatusOr<void *> PipelineBuffers::buffer(const std::string &slot, int microbatch,
                                         uint64_t bytes) {
  SlotPool &p = pool(slot, bytes);
  if (p.onHost.count(microbatch)) {
    auto pending = std::find_if(offloading_.begin(), offloading_.end(), [&](const Copy &c) {
      return c.slot == slot && c.microbatch == microbatch;
    });
    if (pending != offloading_.end()) {
      // Wanted back before its offload settled: the device copy is still
      // lent and whole (the copy only read it), so the host copy goes.
      if (Status s = dropHostCopy(offloading_, pending, p, microbatch); !s)
        return s;
    } else {
      if (Status s = prefetch(slot, microbatch); !s)
        return s;
      if (Status s = finishReload(p, slot, microbatch); !s)
        return s;
    }
  }
  if (auto it = p.lent.find(microbatch); it != p.lent.end())
    return p.buffers[it->second].get();
  StatusOr<size_t> index = lend(p, slot, microbatch);
  if (!index.ok())
    return index.status();
  return p.buffers[*index].get();
}

void PipelineBuffers::release(const std::string &slot, int microbatch) {
  SlotPool &p = pools_[slot];
  auto it = p.lent.find(microbatch);
  if (it == p.lent.end())
    return;
  p.free.push_back(it->second);
  p.lent.erase(it);
  countDevice(p, -1);
}

Status PipelineBuffers::offload(const std::string &slot, int microbatch) {
  auto found = pools_.find(slot);
  if (found == pools_.end() || !found->second.lent.count(microbatch) ||
      found->second.onHost.count(microbatch))
    return Status::error("offloading '" + percentEncode(slot) + "' of microbatch " +
                         std::to_string(microbatch) + ": no such stash on the device");
  SlotPool &p = found->second;
  StatusOr<CopyEngine *> copies = engine();
  if (!copies.ok())
    return copies.status();
  StatusOr<size_t> taken = takeBuffer(p.hostBuffers, p.hostFree, backend_, p.bytes);
  if (!taken.ok())
    return Status(taken.status()).withPrefix("offloading '" + percentEncode(slot) + "': ");
  size_t index = *taken;
  int64_t id = nextCopy_++;
  if (Status s = (*copies)->start(id, CopyDirection::ToHost, p.hostBuffers[index].get(),
                                  p.buffers[p.lent[microbatch]].get(), size_t(p.bytes));
      !s) {
    p.hostFree.push_back(index);
    return s;
  }
  p.onHost[microbatch] = index;
  countHost(p, +1);
  offloading_.push_back({id, slot, microbatch});
  return Status::success();
}

Status PipelineBuffers::settleOffloads() {
  for (const Copy &c : offloading_) {
    if (Status s = copies_->wait(c.id); !s)
      return s;
    release(c.slot, c.microbatch);
  }
  offloading_.clear();
  return Status::success();
}

Status PipelineBuffers::prefetch(const std::string &slot, int microbatch) {
  auto found = pools_.find(slot);
  if (found == pools_.end() || !found->second.onHost.count(microbatch) ||
      found->second.lent.count(microbatch))
    return Status::success(); // on the device, or already coming back
  SlotPool &p = found->second;
  StatusOr<size_t> index = lend(p, slot, microbatch);
  if (!index.ok())
    return index.status();
  int64_t id = nextCopy_++;
  if (Status s = copies_->start(id, CopyDirection::ToDevice, p.buffers[*index].get(),
                                p.hostBuffers[p.onHost[microbatch]].get(), size_t(p.bytes));
      !s)
    return s;
  reloading_.push_back({id, slot, microbatch});
  return Status::success();
}

Status PipelineBuffers::finishReload(SlotPool &pool, const std::string &slot, int microbatch) {
  auto it = std::find_if(reloading_.begin(), reloading_.end(), [&](const Copy &c) {
    return c.slot == slot && c.microbatch == microbatch;
  });
  if (it == reloading_.end())
    return Status::error("internal error: '" + percentEncode(slot) + "' of microbatch " +
                         std::to_string(microbatch) + " is on the host and not coming back");
  return dropHostCopy(reloading_, it, pool, microbatch);
}

Status PipelineBuffers::dropHostCopy(std::vector<Copy> &copies, std::vector<Copy>::iterator copy,
                                     SlotPool &pool, int microbatch) {
  if (Status s = copies_->wait(copy->id); !s)
    return s;
  copies.erase(copy);
  pool.hostFree.push_back(pool.onHost[microbatch]);
  pool.onHost.erase(microbatch);
  countHost(pool, -1);
  return Status::success();
}

bool PipelineBuffers::onHost(const std::string &slot, int microbatch) const {
  auto found = pools_.find(slot);
  return found != pools_.end() && found->second.onHost.count(microbatch);
}

} // namespace trc::rt
