#include "sched/select.hpp"

#include <algorithm>
#include <cstdio>

namespace cgdr::sched {

const char* channelName(Channel c) {
  static const char* names[] = {"shm-eager", "shm-cma", "host-pipeline", "cuda-ipc", "cuda-vmm-zc",
                                "cuda-vmm-stage", "self", "gdrcopy"};
  return c < Channel::kCount ? names[static_cast<int>(c)] : "none";
}

bool usable(Channel c, const Query& q) {
  bool gpu = q.src != mem::MemKind::kHost;
  switch (c) {
    case Channel::kEager: return true;
    case Channel::kHostPipe: return true;
    case Channel::kCma: return q.caps.cma && !gpu;
    case Channel::kCudaIpc: return q.caps.ipc && q.src == mem::MemKind::kDevice && q.caps.contiguous;
    case Channel::kCudaVmmZc: return q.caps.vmmZc && q.src == mem::MemKind::kDevice && q.caps.contiguous;
    case Channel::kCudaVmmStage: return q.caps.vmmStage && q.src == mem::MemKind::kDevice && q.caps.contiguous;
    case Channel::kSelf: return q.peer == PeerClass::kSelf && q.caps.contiguous;
    case Channel::kGdrcopy: return q.caps.gdrcopy && gpu;
    case Channel::kCount: break;
  }
  return false;
}

Channel select(const Table& t, const Query& q) {
  if (t.forced != Channel::kCount && usable(t.forced, q)) return t.forced;
  for (const Rule& r : t.rulesFor(q))
    if (q.bytes <= r.maxBytes && usable(r.channel, q)) return r.channel;
  return Channel::kHostPipe;  // every list ends with it; this is for an empty (misconfigured) list
}

bool senderCopies(const Table& t, const Query& q) {
  if (q.src != mem::MemKind::kDevice || q.dst != Dst::kGpu || q.peer == PeerClass::kSelf) return false;
  if (q.sameGpu && t.sameGpuDriver) return q.senderDrives;
  return q.bytes > t.pullLimit(q.peer, q.pattern);
}

bool hostRails(const Table& t, const Query& q, std::size_t tails[2]) {
  tails[0] = tails[1] = 0;
  std::size_t offset = t.railOffset[static_cast<int>(q.pattern)];
  if (t.forced != Channel::kCount || !q.caps.otherGpu || !q.caps.contiguous || q.src != mem::MemKind::kDevice ||
      q.dst != Dst::kGpu || q.peer == PeerClass::kSelf || q.sameGpu || q.bytes <= offset ||
      q.bytes < t.railMin[static_cast<int>(q.pattern)])
    return false;
  for (int both = 0; both < 2; ++both) {
    // NVLink keeps a part: PUSHED names it
    double share = std::min(t.railShare[both][q.caps.otherGpuInvisible], 0.9);
    if (share <= 0 || (both && q.bytes < t.railMinBoth)) continue;
    tails[both] = static_cast<std::size_t>(share * static_cast<double>(q.bytes - offset)) / kRailGrain * kRailGrain;
  }
  return tails[0] || tails[1];
}

std::size_t hostRail(const Table& t, const Query& q) {
  std::size_t tails[2];
  return hostRails(t, q, tails) ? tails[q.bothWays] : 0;
}

double railFactorAfter(double factor, std::int64_t pushNs, std::int64_t lateNs) {
  if (!(factor >= kRailFactorMin)) factor = kRailFactorMin;  // also NaN
  if (factor > 1) factor = 1;
  if (lateNs < 0) return std::min(1.0, factor + 1.0 / 32);  // the tail was first: room for more
  if (railTailLate(pushNs, lateNs)) return std::max(kRailFactorMin, factor * 0.85);
  return factor;  // landed soon after (within a quarter of the NVLink part's time)
}

bool leaveToReceiver(const Table& t, const Query& q) {
  return q.sameGpu && t.sameGpuDriver && !q.senderDrives && q.peer != PeerClass::kSelf;
}

const std::vector<Rule>& Table::rules(PeerClass p, bool gpuSrc, Dst d, Pattern pat) const {
  return rules_[static_cast<int>(p)][gpuSrc][static_cast<int>(d)][static_cast<int>(pat)];
}
std::vector<Rule>& Table::rules(PeerClass p, bool gpuSrc, Dst d, Pattern pat) {
  return rules_[static_cast<int>(p)][gpuSrc][static_cast<int>(d)][static_cast<int>(pat)];
}
const std::vector<Rule>& Table::rulesFor(const Query& q) const {
  bool gpu = q.src != mem::MemKind::kHost;
  if (gpu && q.sameGpu && q.dst == Dst::kGpu) {
    const auto& rs = sameGpuRules_[static_cast<int>(q.peer)][static_cast<int>(q.pattern)];
    if (!rs.empty()) return rs;
  }
  return rules(q.peer, gpu, q.dst, q.pattern);
}

std::string Table::describe() const {
  static const char* peers[] = {"self", "same-namespace", "container"};
  static const char* dsts[] = {"(sender: eager?)", "to host", "to GPU", "to posted GPU"};
  std::string out = "# cgdr scheduler table (first usable rule whose size bound holds)\n";
  if (forced != Channel::kCount) out += std::string("# forced channel: ") + channelName(forced) + "\n";
  char line[512];
  auto appendRules = [&](const std::vector<Rule>& rs) {
    for (const Rule& r : rs) {
      if (r.maxBytes == SIZE_MAX) std::snprintf(line, sizeof line, " %s", channelName(r.channel));
      else std::snprintf(line, sizeof line, " <=%zu %s,", r.maxBytes, channelName(r.channel));
      out += line;
    }
    out += "\n";
  };
  for (int p = 0; p < static_cast<int>(PeerClass::kCount); ++p)
    for (int g = 0; g < 2; ++g)
      for (int d = 0; d < 4; ++d)
        for (int pat = 0; pat < 2; ++pat) {
          const auto& rs = rules_[p][g][d][pat];
          if (rs.empty()) continue;
          std::snprintf(line, sizeof line, "%-15s %-4s %-17s %-9s:", peers[p], g ? "GPU" : "host", dsts[d],
                        pat ? "bandwidth" : "latency");
          out += line;
          appendRules(rs);
        }
  for (int p = 0; p < static_cast<int>(PeerClass::kCount); ++p)
    for (int pat = 0; pat < 2; ++pat) {
      const auto& rs = sameGpuRules_[p][pat];
      if (rs.empty()) continue;
      std::snprintf(line, sizeof line, "%-15s %-4s %-17s %-9s:", peers[p], "GPU", "to GPU, same GPU",
                    pat ? "bandwidth" : "latency");
      out += line;
      appendRules(rs);
    }
  for (int p = static_cast<int>(PeerClass::kSameNamespace); p < static_cast<int>(PeerClass::kCount); ++p)  // not self
    for (int pat = 0; pat < 2; ++pat) {
      std::size_t lim = pullLimit_[p][pat];
      std::snprintf(line, sizeof line, "%-15s GPU  %-17s %-9s: receiver pulls <=%zu, sender pushes above\n", peers[p],
                    "(not advertised)", pat ? "bandwidth" : "latency", lim);
      out += line;
    }
  if (railShare[0][0] > 0 || railShare[0][1] > 0 || railShare[1][0] > 0 || railShare[1][1] > 0) {
    char both[128] = "both ways: off";
    if (railShare[1][0] > 0 || railShare[1][1] > 0)
      std::snprintf(both, sizeof both, "both ways: %.3f (%.3f) from %zu bytes on, less where earlier tails landed late",
                    railShare[1][0], railShare[1][1], railMinBoth);
    std::snprintf(line, sizeof line,
                  "GPU to another GPU, single copy, one way: %.3f (that GPU not visible here: %.3f) of the bytes "
                  "beyond %zu of messages from %zu bytes on (bandwidth-bound traffic: beyond %zu, from %zu on) "
                  "through host memory beside it; %s\n",
                  railShare[0][0], railShare[0][1], railOffset[static_cast<int>(Pattern::kLatency)],
                  railMin[static_cast<int>(Pattern::kLatency)], railOffset[static_cast<int>(Pattern::kBandwidth)],
                  railMin[static_cast<int>(Pattern::kBandwidth)], both);
    out += line;
  } else {
    out += "GPU to another GPU, single copy: no host rail\n";
  }
  out += sameGpuDriver
             ? "same GPU used in turns (two processes, no MPS): the pair's lower world rank makes every copy "
               "either side could; under MPS: as between two GPUs\n"
             : "same GPU (two processes): as between two GPUs\n";
  return out;
}

}  // namespace cgdr::sched
