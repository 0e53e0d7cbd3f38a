// Workload tracing (C-GDR): per peer, counts of blocking and non-blocking point-to-point calls.
// Past CGDR_TRACE_MIN calls, a peer whose share of non-blocking calls reaches
// CGDR_TRACE_THRESHOLD is treated as bandwidth-bound and the bandwidth switch points apply.
// On the hot path it is two relaxed (unlocked) increments.
#pragma once
#include <atomic>
#include <cstdint>
#include <vector>

#include "sched/select.hpp"

namespace cgdr::sched {

class Tracer {
 public:
  void resize(int worldSize);
  void count(int worldPeer, bool nonblocking) {
    if (worldPeer < 0 || worldPeer >= static_cast<int>(counts_.size())) return;
    // Plain loads and stores (no locked instruction on the hot path): threads racing on one peer
    // may lose a count, which a heuristic over many calls does not mind.
    Counts& c = counts_[worldPeer];
    c.calls.store(c.calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    if (nonblocking) c.nonblocking.store(c.nonblocking.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  Pattern pattern(int worldPeer) const;

 private:
  struct Counts {
    std::atomic<std::uint64_t> calls{0}, nonblocking{0};
  };
  std::vector<Counts> counts_;
};

Tracer& tracer();
// The decision rule, pure (unit-tested): bandwidth-bound once enough calls are non-blocking.
Pattern classify(std::uint64_t calls, std::uint64_t nonblocking, std::uint64_t minCalls, double threshold);

}  // namespace cgdr::sched
