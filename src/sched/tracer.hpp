// Workload tracing (C-GDR): per peer, counts of blocking and non-blocking point-to-point calls.
// Past CGDR_TRACE_MIN calls, a peer whose share of non-blocking calls reaches
// CGDR_TRACE_THRESHOLD is treated as bandwidth-bound and the bandwidth switch points apply.
// The share is judged over the recent calls (CGDR_TRACE_WINDOW): whenever a peer's count reaches
// the window both its counts are halved, so a program that moves from one pattern to another
// gets the other switch points within about a window of calls.
// On the hot path: two relaxed (unlocked) loads and stores and a comparison.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "sched/select.hpp"

namespace cgdr::sched {

class Tracer {
 public:
  // Counts for worldSize peers, judged over the window of CGDR_TRACE_WINDOW calls.
  void resize(int worldSize);
  // The same with a window of its own (raised to at least 2; 0: every call since the start).
  void resize(int worldSize, std::uint64_t window);
  void count(int worldPeer, bool nonblocking) {
    if (worldPeer < 0 || worldPeer >= static_cast<int>(counts_.size())) return;
    // Plain loads and stores (no locked instruction on the hot path): threads racing on one peer
    // may lose a count, or a halving, which a heuristic over many calls does not mind.
    Counts& c = counts_[worldPeer];
    std::uint64_t calls = c.calls.load(std::memory_order_relaxed) + 1;
    std::uint64_t nb = c.nonblocking.load(std::memory_order_relaxed) + (nonblocking ? 1 : 0);
    if (calls >= window_) {  // the older half of the window goes (its share stays)
      calls /= 2;
      nb /= 2;
    }
    c.calls.store(calls, std::memory_order_relaxed);
    c.nonblocking.store(nb, std::memory_order_relaxed);
  }
  Pattern pattern(int worldPeer) const;
  std::uint64_t window() const { return window_; }

 private:
  struct Counts {
    std::atomic<std::uint64_t> calls{0}, nonblocking{0};
  };
  std::vector<Counts> counts_;
  std::uint64_t window_ = UINT64_MAX;  // UINT64_MAX: no window
};

Tracer& tracer();
// One line saying which peers' traffic counts as bandwidth-bound under the settings in force (for
// CGDR_SCHED_INFO: it says which half of the table applies).
std::string describeTracer();
// The decision rule, pure (unit-tested): bandwidth-bound once enough calls are non-blocking.
Pattern classify(std::uint64_t calls, std::uint64_t nonblocking, std::uint64_t minCalls, double threshold);
// The window a peer's counts are halved at: the setting, raised to twice the calls a pattern needs
// (so halved counts still decide one) and to at least 2; 0 (no window): UINT64_MAX.
std::uint64_t traceWindow(std::uint64_t window, std::uint64_t minCalls);

}  // namespace cgdr::sched
