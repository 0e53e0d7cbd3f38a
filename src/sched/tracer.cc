#include "sched/tracer.hpp"

#include "base/config.hpp"

namespace cgdr::sched {
namespace {
base::Setting<bool> gTrace("CGDR_TRACE", "1", "", "Trace blocking vs non-blocking calls per peer to pick switch points.");
base::Setting<long long> gMin("CGDR_TRACE_MIN", "64", "calls", "Calls to a peer before its pattern is decided.");
base::Setting<double> gThreshold("CGDR_TRACE_THRESHOLD", "0.5", "fraction",
                                 "Share of non-blocking calls from which a peer's traffic is bandwidth-bound.");
}  // namespace

Pattern classify(std::uint64_t calls, std::uint64_t nonblocking, std::uint64_t minCalls, double threshold) {
  if (calls < minCalls || calls == 0) return Pattern::kLatency;
  return static_cast<double>(nonblocking) / static_cast<double>(calls) >= threshold ? Pattern::kBandwidth
                                                                                      : Pattern::kLatency;
}

void Tracer::resize(int worldSize) { counts_ = std::vector<Counts>(static_cast<std::size_t>(worldSize)); }

Pattern Tracer::pattern(int worldPeer) const {
  if (!gTrace.get() || worldPeer < 0 || worldPeer >= static_cast<int>(counts_.size())) return Pattern::kLatency;
  const Counts& c = counts_[worldPeer];
  return classify(c.calls.load(std::memory_order_relaxed), c.nonblocking.load(std::memory_order_relaxed),
                  static_cast<std::uint64_t>(gMin.get()), gThreshold.get());
}

Tracer& tracer() {
  static Tracer t;
  return t;
}

}  // namespace cgdr::sched
