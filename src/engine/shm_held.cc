// Copies held back to be moved as one window by the copy kernel (ShmEngine::holdPush, holdPull):
// a window of GPU messages (a bandwidth test, a halo exchange) otherwise puts one copy-engine
// operation per message on the stream, ~2.5-3.5 us each for a small one, where one kernel launch
// moves up to mem::kGatherMax of them in ~11 us in all. A sender's pushes into advertised
// receives, and a receiver's pulls of the envelopes one step reads (sends that came before their
// receives were posted: a third to a half of a bandwidth test's messages).
#include <algorithm>
#include <vector>

#include "engine/shm_engine.hpp"
#include "engine/shm_ops.hpp"
#include "mem/gpu_batch.hpp"

namespace cgdr::engine {

bool ShmEngine::wouldHoldPush(std::size_t n, int device) const {
  if (!mem::batchable(n)) return false;
  return !held_.empty() || mem::streamBusy(device, mem::CopyDir::kPeer);  // else alone: start now
}

bool ShmEngine::wouldHoldPull(std::size_t n) const { return draining_ && mem::batchable(n); }

bool ShmEngine::holdPush(ShmSend* s, const mem::GpuCopy::Many& m, int device) {
  if (!wouldHoldPush(m.n, device)) return false;
  // A full window starts first (never the caller's copy: the caller sets its state up after this).
  if (held_.size() >= static_cast<std::size_t>(mem::kGatherMax)) releaseHeld();
  held_.push_back({s, nullptr, m, device});
  return true;
}

bool ShmEngine::holdPull(ShmRecv* r, const mem::GpuCopy::Many& m, int device) {
  if (!wouldHoldPull(m.n)) return false;
  if (held_.size() >= static_cast<std::size_t>(mem::kGatherMax)) releaseHeld();  // (as above)
  held_.push_back({nullptr, r, m, device});
  return true;
}

void ShmEngine::dropHeld(const base::Op* op) {
  held_.erase(std::remove_if(held_.begin(), held_.end(),
                             [op](const HeldCopy& h) { return h.send == op || h.recv == op; }),
              held_.end());
}

// One kernel per GPU for the copies held on it; a copy alone, or a window the kernel could not
// take, starts by itself as without holding.
void ShmEngine::releaseHeld() {
  if (held_.empty()) return;
  std::vector<HeldCopy> all;
  all.swap(held_);  // (an operation failing below drops nothing from it)
  std::vector<char> taken(all.size(), 0);
  std::vector<mem::GpuCopy::Many> items;
  std::vector<mem::GpuCopy*> copies;
  std::vector<const HeldCopy*> group;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (taken[i]) continue;
    items.clear();
    copies.clear();
    group.clear();
    for (std::size_t j = i; j < all.size(); ++j) {
      if (taken[j] || all[j].device != all[i].device) continue;
      taken[j] = 1;
      items.push_back(all[j].copy);
      copies.push_back(all[j].send ? all[j].send->heldCopy() : all[j].recv->heldCopy());
      group.push_back(&all[j]);
    }
    bool together = group.size() > 1 &&
                    mem::GpuCopy::startMany(items.data(), copies.data(), static_cast<int>(group.size()),
                                            all[i].device).isOk();
    for (const HeldCopy* h : group) {
      if (together) ++(h->send ? stats_.heldPushes : stats_.heldPulls);
      if (h->send) h->send->releaseHeld(together);
      else h->recv->releaseHeld(together);
    }
  }
}

}  // namespace cgdr::engine
