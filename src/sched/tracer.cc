#include "sched/tracer.hpp"

#include <algorithm>
#include <cstdio>

#include "base/config.hpp"

namespace cgdr::sched {
namespace {
base::Setting<bool> gTrace("CGDR_TRACE", "1", "",
                           "Trace blocking vs non-blocking calls per peer to pick switch points.");
base::Setting<long long> gMin("CGDR_TRACE_MIN", "64", "calls",
                              "Calls to a peer before its pattern is decided.", base::IntRange{0});
base::Setting<double> gThreshold("CGDR_TRACE_THRESHOLD", "0.5", "fraction",
                                 "Share of non-blocking calls from which a peer's traffic is bandwidth-bound.",
                                 base::DoubleRange{0, 1});
base::Setting<long long> gWindow("CGDR_TRACE_WINDOW", "1024", "calls",
                                 "The recent calls to a peer its pattern is judged over: when its count reaches "
                                 "this, its counts are halved, so a program that moves from one pattern to another "
                                 "(non-blocking exchanges, then blocking ping-pongs) gets the other switch points "
                                 "within about this many calls. At least twice CGDR_TRACE_MIN. 0: every call since "
                                 "the start.",
                                 base::IntRange{0});

// The window of the settings in force (traceWindow).
std::uint64_t windowInForce() {
  return traceWindow(static_cast<std::uint64_t>(gWindow.get()), static_cast<std::uint64_t>(gMin.get()));
}
}  // namespace

Pattern classify(std::uint64_t calls, std::uint64_t nonblocking, std::uint64_t minCalls, double threshold) {
  if (calls < minCalls || calls == 0) return Pattern::kLatency;
  return static_cast<double>(nonblocking) / static_cast<double>(calls) >= threshold ? Pattern::kBandwidth
                                                                                      : Pattern::kLatency;
}

std::uint64_t traceWindow(std::uint64_t window, std::uint64_t minCalls) {
  if (window == 0) return UINT64_MAX;
  std::uint64_t least = minCalls > UINT64_MAX / 2 ? UINT64_MAX : std::max<std::uint64_t>(2 * minCalls, 2);
  return std::max(window, least);
}

void Tracer::resize(int worldSize) { resize(worldSize, windowInForce()); }

void Tracer::resize(int worldSize, std::uint64_t window) {
  counts_ = std::vector<Counts>(static_cast<std::size_t>(worldSize));
  window_ = traceWindow(window, 0);
}

Pattern Tracer::pattern(int worldPeer) const {
  if (!gTrace.get() || worldPeer < 0 || worldPeer >= static_cast<int>(counts_.size())) return Pattern::kLatency;
  const Counts& c = counts_[worldPeer];
  return classify(c.calls.load(std::memory_order_relaxed), c.nonblocking.load(std::memory_order_relaxed),
                  static_cast<std::uint64_t>(gMin.get()), gThreshold.get());
}

std::string describeTracer() {
  if (!gTrace.get()) return "workload tracer off (CGDR_TRACE=0): the latency-bound switch points apply to every peer";
  std::uint64_t window = windowInForce();
  char which[64] = "all since the start";
  if (window != UINT64_MAX)
    std::snprintf(which, sizeof which, "the recent ones: counts halved at %llu",
                  static_cast<unsigned long long>(window));
  char line[256];
  std::snprintf(line, sizeof line,
                "workload tracer: a peer's traffic is bandwidth-bound once this rank made %lld calls with it and "
                "at least %.2f of them (%s) were non-blocking; latency-bound otherwise",
                gMin.get(), gThreshold.get(), which);
  return line;
}

Tracer& tracer() {
  static Tracer t;
  return t;
}

}  // namespace cgdr::sched
