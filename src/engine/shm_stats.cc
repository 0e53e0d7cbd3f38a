// CGDR_STATS=1: the engine's counters, printed at MPI_Finalize (ShmEngine::stop).
#include <algorithm>
#include <cstdio>
#include <string>

#include "base/log.hpp"
#include "engine/shm_engine.hpp"
#include "mem/classify.hpp"
#include "mem/resident.hpp"
#include "mem/vmm_heap.hpp"

namespace cgdr::engine {
namespace {
using ull = unsigned long long;  // the counters as printf's %llu takes them
}  // namespace

void ShmEngine::printStats() {
  const Stats& s = stats_;
  CGDR_LOG(kWarn, kShm,
           "stats: eager %llu, rendezvous %llu (single copy %llu; into GPU buffers pushed %llu, pulled %llu; "
           "pipelined %llu), peak unexpected eager bytes %zu, shared segment %zu bytes",
           ull(s.eager), ull(s.rendezvous), ull(s.singleCopy), ull(s.pushed), ull(s.pulled), ull(s.pipelined),
           s.peakUnexpectedBytes, segmentBytes());
  if (s.railed) {
    double lowest = 1;
    for (auto& p : endpoint().peers()) lowest = std::min(lowest, p->railFactor);
    CGDR_LOG(kWarn, kShm,
             "stats: host rail: %llu pushes sent %llu bytes through host memory beside NVLink (%llu with traffic "
             "both ways: tails late %llu, first %llu; governor now %.3f, lowest over peers)",
             ull(s.railed), ull(s.railBytes), ull(s.railedBoth), ull(s.railLate), ull(s.railEarly), lowest);
  }
  if (gpu_) {
    auto [ok, refused] = gpu_->pinCounts();
    if (ok + refused)
      CGDR_LOG(kWarn, kShm, "stats: host chunks page-locked for GPU copies: %zu regions (%zu refused)", ok, refused);
  }
  if (s.unpinnedCopies)
    CGDR_LOG(kWarn, kShm, "stats: host chunks not page-locked for %llu GPU copies (a missed pinFor)",
             ull(s.unpinnedCopies));
  if (s.advertised)
    CGDR_LOG(kWarn, kShm,
             "stats: adverts: %llu receives advertised, %llu claimed by their sender (%llu ended by a word its GPU "
             "set), %llu retracted; this rank's GPU set %llu such words",
             ull(s.advertised), ull(s.advertsClaimed), ull(s.advertsDelivered), ull(s.advertsRetracted),
             ull(s.deliveredByGpu));
  if (s.advertWaits)
    CGDR_LOG(kWarn, kShm,
             "stats: advert waits: %llu sends waited (%llu non-blocking ones within their call, %llu of which found "
             "one), %llu found one (%.2f us on average, longest %.1f us), %llu ran out",
             ull(s.advertWaits), ull(s.advertWaitsNonBlocking), ull(s.advertWaitFoundNonBlocking),
             ull(s.advertWaitFound), s.advertWaitFound ? s.advertWaitNs / 1e3 / double(s.advertWaitFound) : 0.0,
             s.advertWaitLongestNs / 1e3, ull(s.advertWaitRanOut));
  std::string line;
  for (int c = 0; c < static_cast<int>(sched::Channel::kCount); ++c)
    if (s.channel[c])
      line += std::string(line.empty() ? "" : ", ") + sched::channelName(static_cast<sched::Channel>(c)) + " " +
              std::to_string(s.channel[c]);
  if (!line.empty()) CGDR_LOG(kWarn, kShm, "stats: channels: %s", line.c_str());
  printGpuStats();
  if (tracing()) printTrace();
  printSizeStats();
}

// Which channels served each size class (powers of two).
void ShmEngine::printSizeStats() const {
  const Stats& s = stats_;
  for (int b = 0; b < 65; ++b) {
    if (!s.bySize[b]) continue;
    std::string line;
    for (int c = 0; c < static_cast<int>(sched::Channel::kCount); ++c)
      if (s.bySize[b] & (1u << c))
        line += std::string(line.empty() ? "" : ",") + sched::channelName(static_cast<sched::Channel>(c));
    unsigned long long lo = b == 0 ? 0 : 1ull << (b - 1), hi = b == 0 ? 0 : b == 64 ? ~0ull : (1ull << b) - 1;
    CGDR_LOG(kWarn, kShm, "stats: sizes %llu..%llu: %s", lo, hi, line.c_str());
  }
}

// The GPU copies by the way they were made, the peers' cuMem mappings, the exportable heap.
void ShmEngine::printGpuStats() const {
  const Stats& s = stats_;
  mem::CopyCounts cc = mem::copyCounts();
  if (cc.graph + cc.plain + cc.batched + cc.resident)
    CGDR_LOG(kWarn, kShm, "stats: GPU copies: graph %llu (repeated %llu), plain %llu, by the copy kernel %llu in "
             "%llu launches (%llu held pushes, %llu held pulls; largest %llu bytes), by the resident kernel %llu "
             "in %llu launches (%llu made on the copy engine after it left, %llu while it did not run, %llu while "
             "full; %llu batches shared with its helpers; %llu times it left switched out, %llu when asked, longest "
             "%.1f us between looks; %llu waited for its start, %.1f us on average); completion asked %llu, "
             "inferred from stream order %llu",
             cc.graph, cc.repeated, cc.plain, cc.batched, cc.kernels, ull(s.heldPushes), ull(s.heldPulls),
             cc.batchedLargest, cc.resident, cc.residentLaunches,
             cc.residentRedone, cc.residentNotRunning, cc.residentFull, cc.residentCrewed, cc.residentTurned,
             cc.residentLeftAsked, static_cast<double>(cc.residentLongestNs) / 1e3, cc.residentWaited,
             cc.residentWaited ? static_cast<double>(cc.residentWaitedNs) / 1e3 / cc.residentWaited : 0.0, cc.asked,
             cc.inferred);
  if (gpu_) {
    auto lc = gpu_->linkCounts();
    if (lc.held + lc.released)
      CGDR_LOG(kWarn, kShm, "stats: peers' cuMem memory: %zu mappings held at exit, %zu dropped when freed",
               lc.held, lc.released);
  }
  mem::HeapStats hs = mem::heapStats();
  if (hs.served + hs.asyncServed + hs.fallbacks + hs.deferred)
    CGDR_LOG(kWarn, kShm, "stats: exportable heap: %zu cudaMalloc served, %zu cudaMallocAsync served (%zu reused "
             "on their stream; %zu fell back), %zu cudaFreeAsync waited for their stream (%zu in a capture, kept), "
             "%zu chunks of %zu MiB (%zu shared, %zu idle of %zu MiB, %zu trimmed), %zu live", hs.served,
             hs.asyncServed, hs.reused, hs.fallbacks, hs.deferred, hs.captured, hs.chunks, hs.chunkBytes >> 20,
             hs.sharedChunks, hs.idleChunks, hs.idleBytes >> 20, hs.trimmed, hs.live);
}

// Median and mean of each step of a GPU rendezvous (CGDR_TRACE_GPU=1).
void ShmEngine::printTrace() {
  static const char* names[] = {"send-build", "envelope",    "recv-choose", "copy-issue",
                                "copy-run",   "cts",         "pushed",      "recv-finish",
                                "turnaround", "recv-return", "send-entry",  "done-advert",
                                "done-look"};
  static_assert(sizeof names / sizeof *names == kTrCount);
  std::string line;
  for (int t = 0; t < kTrCount; ++t)
    if (traceCount_[t]) {
      auto& v = traceSamples_[t];
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      char b[112];
      std::snprintf(b, sizeof b, "%s%s %.2f / %.2f us (%llu)", line.empty() ? "" : ", ", names[t],
                    double(v[v.size() / 2]) / 1000.0, double(traceSum_[t]) / double(traceCount_[t]) / 1000.0,
                    ull(traceCount_[t]));
      line += b;
    }
  CGDR_LOG(kWarn, kShm, "stats: GPU rendezvous trace (median / mean): %s", line.c_str());
}

}  // namespace cgdr::engine
