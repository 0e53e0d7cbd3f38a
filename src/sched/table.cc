// The rule table in force: defaults (measured on nvidia-h200-x2, see docs/performance.md),
// overridden by settings (environment, MV2_* aliases, CGDR_TUNING_FILE).
#include <algorithm>
#include <cstdint>
#include <string>

#include "base/config.hpp"
#include "base/log.hpp"
#include "channel/shm/endpoint.hpp"
#include "sched/select.hpp"
#include "sched/tracer.hpp"

namespace cgdr::sched {
namespace {

using base::Bytes;
using base::DoubleRange;
using base::Setting;

Setting<Bytes> gCudaEager("CGDR_CUDA_EAGER_LIMIT", "0", "bytes",
                          "GPU messages up to this size are staged through host memory into the ring; larger "
                          "ones rendezvous so the receiver can pull them (latency-bound traffic).");
Setting<Bytes> gCudaEagerBw("CGDR_CUDA_EAGER_LIMIT_BW", "0", "bytes", "As CGDR_CUDA_EAGER_LIMIT, for bandwidth-bound traffic.");
Setting<Bytes> gCudaEagerXns("CGDR_CUDA_EAGER_LIMIT_CONTAINER", "64K", "bytes",
                             "As CGDR_CUDA_EAGER_LIMIT, for peers in another container (capped by the ring's eager "
                             "limit): there a cudaMalloc buffer has no single-copy path, and a copy to host and one "
                             "back beat the two device copies and the extra round trips of the cuMem ring for small "
                             "messages.");
Setting<Bytes> gIpc("CGDR_CUDA_IPC_THRESHOLD", "0", "bytes",
                    "GPU messages from this size on are copied once through CUDA IPC or shared cuMem memory "
                    "(pulled, or pushed into a receive posted first); smaller ones are staged through host memory.",
                    {"MV2_CUDA_IPC_THRESHOLD"});
Setting<Bytes> gIpcBw("CGDR_CUDA_IPC_THRESHOLD_BW", "0", "bytes", "As CGDR_CUDA_IPC_THRESHOLD, for bandwidth-bound traffic.");
Setting<Bytes> gStageMin("CGDR_CUDA_VMM_STAGE_MIN", "128K", "bytes",
                         "GPU messages from this size on may go through the sender's cuMem staging ring when no "
                         "single-copy path exists (smaller: host staging).");
Setting<Bytes> gStageMinSameGpu("CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU", "4M", "bytes",
                                 "As CGDR_CUDA_VMM_STAGE_MIN, where the destination is on the source's own GPU "
                                 "(another process on it): there the ring's device copies by both processes pay a "
                                 "context switch each (~135 us on an H200 without MPS) and the host pipeline's copy-"
                                 "engine copies do not; on one H200 the ring's latency overtook host staging's at ~4 "
                                 "MiB (latency-bound traffic). Not where both processes share the GPU through MPS "
                                 "(no switch there): CGDR_CUDA_VMM_STAGE_MIN applies.");
Setting<Bytes> gStageMinSameGpuBw("CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU_BW", "2M", "bytes",
                                  "As CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU, for bandwidth-bound traffic (the ring's "
                                  "bandwidth overtook host staging's at ~2 MiB).");
Setting<Bytes> gAdvert("CGDR_CUDA_ADVERT_LIMIT", "1024G", "bytes",
                       "A sender copies a GPU message of up to this size straight into a receive the receiver "
                       "posted before it came and advertised (CGDR_CUDA_PUSH=posted); larger ones rendezvous "
                       "(latency-bound traffic).");
Setting<Bytes> gAdvertBw("CGDR_CUDA_ADVERT_LIMIT_BW", "1024G", "bytes",
                         "As CGDR_CUDA_ADVERT_LIMIT, for bandwidth-bound traffic.");
Setting<Bytes> gPullLimit("CGDR_CUDA_PULL_LIMIT", "1M", "bytes",
                          "A GPU message whose receive was not advertised (posted after it came) is pulled by the "
                          "receiver up to this size; a larger one is pushed by its sender into the receiver's buffer "
                          "(one more control hop), as advertised receives are (CGDR_CUDA_PUSH=posted). Then with "
                          "traffic both ways each GPU copies only its outgoing messages: on nvidia-h200-x2 one GPU "
                          "driving both directions tops out at ~390 GB/s in total, and bibw across containers at "
                          "256 MiB fell to 371-483 GB/s where one side pushed and the other pulled (latency-bound "
                          "traffic).");
Setting<Bytes> gPullLimitBw("CGDR_CUDA_PULL_LIMIT_BW", "1M", "bytes",
                            "As CGDR_CUDA_PULL_LIMIT, for bandwidth-bound traffic.");
Setting<double> gRailShare("CGDR_CUDA_HOST_RAIL_SHARE", "0.07", "fraction",
                           "A device message copied once to another GPU (pushed by its sender), with no GPU traffic "
                           "the other way, sends this share of its bytes beyond CGDR_CUDA_HOST_RAIL_OFFSET through "
                           "host memory (the sender's PCIe link, then the receiver's) while the rest crosses NVLink: "
                           "two links at once. Where the receiving process sees the other GPU; best of 0.06-0.1 on "
                           "nvidia-h100-x2 natively (docs/performance.md). 0: off.",
                           DoubleRange{0, 0.9});
Setting<double> gRailShareInvisible("CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE", "0.1", "fraction",
                                    "As CGDR_CUDA_HOST_RAIL_SHARE, where the receiving process cannot see the other "
                                    "GPU (a container that sees only its own): NVLink copies run slower there, so "
                                    "host memory takes a larger share (best of 0.06-0.14 across pods on "
                                    "nvidia-h100-x2). 0: off.",
                                    DoubleRange{0, 0.9});
Setting<double> gRailShareBoth("CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS", "0", "fraction",
                               "As CGDR_CUDA_HOST_RAIL_SHARE, where the pair has GPU traffic the other way too: each "
                               "GPU's PCIe link then carries its own outgoing tail and its peer's incoming one, and "
                               "each CPU two host pipelines. The most: the receiver lowers it per peer where tails "
                               "landed late, and raises it back where they came first. 0 (off) by default: where "
                               "the receiving process sees the other GPU, NVLink alone already moves what the two "
                               "GPUs can both ways (docs/performance.md: fortieth session, 0.09 gained at most "
                               "1-3 % in windows of 16 on nvidia-h100-x2; the 21-32 % it lost in windows of 64 was "
                               "the receives' fallback to pulling, gone since the forty-fourth session).",
                               DoubleRange{0, 0.9});
Setting<double> gRailShareBothInvisible("CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS_INVISIBLE", "0.05", "fraction",
                                        "As CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS, where the receiving process cannot "
                                        "see the other GPU (a container that sees only its own), whose NVLink copies "
                                        "both ways run ~6 % under what the GPUs can: on nvidia-h100-x2 across pods "
                                        "0.05 made bibw of 64-256 MiB 1.01-1.04x faster in windows of 64 and "
                                        "0.99-1.04x in windows of 16 (docs/performance.md, forty-fourth session). "
                                        "0: off.",
                                        DoubleRange{0, 0.9});
Setting<Bytes> gRailOffset("CGDR_CUDA_HOST_RAIL_OFFSET", "16M", "bytes",
                           "See CGDR_CUDA_HOST_RAIL_SHARE: the host path's longer start (its first block's copy out "
                           "and last block's copy in), in bytes NVLink moves meanwhile; messages up to this size "
                           "cross NVLink alone. For latency-bound traffic: ~44 us x ~360 GB/s on nvidia-h100-x2 "
                           "(docs/performance.md, twenty-sixth session).");
Setting<Bytes> gRailOffsetBw("CGDR_CUDA_HOST_RAIL_OFFSET_BW", "2M", "bytes",
                             "As CGDR_CUDA_HOST_RAIL_OFFSET, for bandwidth-bound traffic (from "
                             "CGDR_CUDA_HOST_RAIL_MIN_BW on): messages in flight together hide most of the host "
                             "path's start behind each other, not all of it. On nvidia-h100-x2 across pods that see "
                             "one GPU each, 2M against 0 made 8 MiB windows 1.05-1.15x faster and steadier, 16 MiB "
                             "0.99-1.04x, 32-256 MiB and natively 0.99-1.01x (docs/performance.md, thirty-ninth "
                             "session).");
Setting<Bytes> gRailMin("CGDR_CUDA_HOST_RAIL_MIN", "0", "bytes",
                        "See CGDR_CUDA_HOST_RAIL_SHARE: messages under this size cross NVLink alone, whatever "
                        "CGDR_CUDA_HOST_RAIL_OFFSET leaves beyond it (latency-bound traffic).");
Setting<Bytes> gRailMinBw("CGDR_CUDA_HOST_RAIL_MIN_BW", "8M", "bytes",
                          "As CGDR_CUDA_HOST_RAIL_MIN, for bandwidth-bound traffic: below it each message's host "
                          "copies cost more than the share they move (on nvidia-h100-x2 the rail made 2 MiB "
                          "windows 16-40 % slower, 4 MiB within the noise, 8 MiB 1-14 % faster; "
                          "docs/performance.md, twenty-seventh session).");
Setting<Bytes> gRailMinBoth("CGDR_CUDA_HOST_RAIL_MIN_BOTH_WAYS", "64M", "bytes",
                            "As CGDR_CUDA_HOST_RAIL_MIN, with traffic both ways (CGDR_CUDA_HOST_RAIL_SHARE_BOTH_WAYS): "
                            "messages under this size cross NVLink alone.");
Setting<Bytes> gGdr("CGDR_GDRCOPY_LIMIT", "8K", "bytes", "GPU messages up to this size use gdrcopy where it exists.",
                    {"MV2_GDRCOPY_LIMIT"});
Setting<Bytes> gCmaMin("CGDR_SHM_CMA_MIN", "8K", "bytes",
                       "Host messages from this size on are copied once (process_vm_readv) where permitted.");
Setting<Bytes> gCmaMaxBw("CGDR_SHM_CMA_MAX_BW", "1M", "bytes",
                         "For bandwidth-bound host traffic, single copy only up to this size: above it the chunk "
                         "pipeline (both ranks copying) is faster.");
Setting<bool> gSameGpuDriver("CGDR_CUDA_SAME_GPU_DRIVER", "1", "",
                             "Where two ranks' GPU buffers are on one GPU, the pair's lower world rank makes every "
                             "copy between them that either side could make (pushes what it sends, pulls what it "
                             "receives): work that two processes put on one GPU in turn costs a context switch each "
                             "time (~135 us per message on an H200 without MPS, against ~9 us where one process "
                             "copies). 0: each message copied as between two GPUs. Where both processes share the "
                             "GPU through MPS there is no such switch: messages are copied as between two GPUs.");
base::ChoiceSetting gForce("CGDR_FORCE_CHANNEL", "auto",
                           {"auto", "shm-eager", "shm-cma", "host-pipeline", "cuda-ipc", "cuda-vmm-zc", "cuda-vmm-stage",
                            "self", "gdrcopy"},
                           "Use this channel for every message the pair can send with it (tests, tuning).");
Setting<bool> gInfo("CGDR_SCHED_INFO", "0", "", "Print the scheduler table in force at start-up (rank 0).");

constexpr std::size_t kAll = SIZE_MAX;

void fill(Table& t, PeerClass p) {
  for (int pat = 0; pat < 2; ++pat) {
    Pattern pt = static_cast<Pattern>(pat);
    bool bw = pt == Pattern::kBandwidth;
    std::size_t cudaEager = (bw ? gCudaEagerBw : gCudaEager).get().value;
    if (p == PeerClass::kContainer) cudaEager = std::max(cudaEager, gCudaEagerXns.get().value);
    std::size_t ipc = (bw ? gIpcBw : gIpc).get().value;
    std::size_t eager = channel::shm::eagerLimit();
    // Host source: eager, then single copy, then the chunk pipeline.
    for (Dst d : {Dst::kUnknown, Dst::kHost, Dst::kGpu}) {
      if (d == Dst::kUnknown) {  // the sender only chooses eager or rendezvous
        t.rules(p, false, d, pt) = {{eager, Channel::kEager}, {kAll, Channel::kHostPipe}};
        continue;
      }
      t.rules(p, false, d, pt) = {{eager, Channel::kEager}, {bw ? gCmaMaxBw.get().value : kAll, Channel::kCma},
                                  {kAll, Channel::kHostPipe}};
      if (gCmaMin.get().value > eager)
        t.rules(p, false, d, pt).insert(t.rules(p, false, d, pt).begin() + 1, {gCmaMin.get().value - 1, Channel::kHostPipe});
    }
    // GPU source, sender's choice: gdrcopy or staged eager for the smallest, else rendezvous. A
    // source the peer can map (caps.vmmZc: an exportable cuMem allocation) always rendezvous: one
    // copy over NVLink beats the two copies of host staging at every size.
    t.rules(p, true, Dst::kUnknown, pt) = {{gGdr.get().value, Channel::kGdrcopy},
                                           {kAll, Channel::kCudaVmmZc},
                                           {cudaEager, Channel::kEager},
                                           {kAll, Channel::kHostPipe}};
    // GPU source, receiver's choice: one copy when the pair can, else the cuMem ring, else host.
    auto receiverRules = [&](std::size_t stageMin) {
      std::vector<Rule> rs;
      if (p == PeerClass::kSelf) rs.push_back({kAll, Channel::kSelf});
      if (ipc > 0) rs.push_back({ipc - 1, Channel::kHostPipe});
      rs.push_back({kAll, Channel::kCudaIpc});
      rs.push_back({kAll, Channel::kCudaVmmZc});
      if (stageMin > 0) rs.push_back({stageMin - 1, Channel::kHostPipe});
      rs.push_back({kAll, Channel::kCudaVmmStage});
      rs.push_back({kAll, Channel::kHostPipe});
      return rs;
    };
    for (Dst d : {Dst::kHost, Dst::kGpu}) t.rules(p, true, d, pt) = receiverRules(gStageMin.get().value);
    if (p != PeerClass::kSelf)
      t.sameGpuRules(p, pt) = receiverRules((bw ? gStageMinSameGpuBw : gStageMinSameGpu).get().value);
    // A posted GPU receive advertised to the sender: the sender copies into it up to the advert
    // limit (a single-copy channel); anything else leaves the message to the rendezvous above,
    // as does a message below the IPC threshold (the receiver's rules stage it through host).
    std::size_t advert = (bw ? gAdvertBw : gAdvert).get().value;
    auto& posted = t.rules(p, true, Dst::kPosted, pt);
    posted = {{advert, Channel::kCudaIpc}, {advert, Channel::kCudaVmmZc}, {kAll, Channel::kHostPipe}};
    if (ipc > 0) posted.insert(posted.begin(), {ipc - 1, Channel::kHostPipe});
    t.rules(p, false, Dst::kPosted, pt) = {{kAll, Channel::kHostPipe}};
    t.pullLimit(p, pt) = (bw ? gPullLimitBw : gPullLimit).get().value;
  }
}

}  // namespace

Table Table::fromSettings() {
  Table t;
  for (int p = 0; p < static_cast<int>(PeerClass::kCount); ++p) fill(t, static_cast<PeerClass>(p));
  if (gForce.get().index > 0) t.forced = static_cast<Channel>(gForce.get().index - 1);
  t.sameGpuDriver = gSameGpuDriver.get();
  const Setting<double>* shares[2][2] = {{&gRailShare, &gRailShareInvisible},
                                         {&gRailShareBoth, &gRailShareBothInvisible}};
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i) {
      t.railShare[b][i] = shares[b][i]->get();  // (0 to 0.9: its range)
    }
  t.railOffset[static_cast<int>(Pattern::kLatency)] = gRailOffset.get().value;
  t.railOffset[static_cast<int>(Pattern::kBandwidth)] = gRailOffsetBw.get().value;
  t.railMin[static_cast<int>(Pattern::kLatency)] = gRailMin.get().value;
  t.railMin[static_cast<int>(Pattern::kBandwidth)] = gRailMinBw.get().value;
  t.railMinBoth = gRailMinBoth.get().value;
  return t;
}

const Table& table() {
  static const Table t = [] {
    Table tt = Table::fromSettings();
    if (gInfo.get() && base::logRank() <= 0) {  // rank 0; a line per log record (the table outgrows one)
      std::string d = tt.describe() + describeTracer() + "\n";
      for (std::size_t at = 0, end; at < d.size(); at = end + 1) {
        end = d.find('\n', at);
        if (end == std::string::npos) end = d.size();
        base::logWrite(base::LogLevel::kWarn, base::Subsys::kSched, "%.*s", static_cast<int>(end - at), d.data() + at);
      }
    }
    return tt;
  }();
  return t;
}

}  // namespace cgdr::sched
