// The scheduler (ARCHITECTURE.md §6): a pure function from (peer class, source and destination
// memory, bytes, workload pattern, what the pair can use) to a channel, over a rule table whose
// switch points come from settings (defaults measured on the GPU machine) or a tuning file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mem/memtype.hpp"

namespace cgdr::sched {

enum class Channel : std::uint8_t {
  kEager,        // shm: data inside the message ring (GPU data staged through host memory)
  kCma,          // shm: receiver copies from the sender's host memory (process_vm_readv)
  kHostPipe,     // shm: pipelined through host chunks (GPU sides copy with async D2H/H2D: cuda-staged)
  kCudaIpc,      // receiver pulls from the sender's GPU buffer through a legacy IPC handle
  kCudaVmmZc,    // receiver pulls from the sender's own exportable cuMem allocation (zero copy)
  kCudaVmmStage, // sender copies into its cuMem ring, receiver pulls blocks over NVLink
  kSelf,         // same process: one direct copy
  kGdrcopy,      // CPU copies through a GPU mapping (small messages; needs gdrdrv)
  kCount
};
const char* channelName(Channel c);

enum class PeerClass : std::uint8_t { kSelf, kSameNamespace, kContainer, kCount };
enum class Pattern : std::uint8_t { kLatency, kBandwidth };
// The destination is unknown when the sender decides (eager or rendezvous); kPosted: a GPU
// receive the receiver posted first and advertised, which the sender may copy into itself (a
// single-copy channel) or leave to the ordinary rendezvous (any other channel).
enum class Dst : std::uint8_t { kUnknown, kHost, kGpu, kPosted };

// What the pair can use for this message (from the locality table and the sender's offer).
struct Caps {
  bool cma = false, ipc = false, vmmZc = false, vmmStage = false, gdrcopy = false, contiguous = true;
  // The destination is on another GPU than the source (each with its own link to host memory):
  // a single copy between them may send part of the bytes through host memory (hostRail).
  bool otherGpu = false;
  // ... and this process cannot see that GPU (a container that sees only its own): its NVLink
  // copies run slower (~363 against ~387 GB/s on nvidia-h100-x2), so host memory takes a larger share.
  bool otherGpuInvisible = false;
};

struct Query {
  PeerClass peer;
  mem::MemKind src;
  Dst dst;
  std::size_t bytes;
  Pattern pattern;
  Caps caps;
  // The source and the destination are on one GPU that the two processes use in turns (not
  // shared through MPS: there their work runs side by side, as on two GPUs), and whether the
  // sender is the pair's driver (Table::sameGpuDriver).
  bool sameGpu = false;
  bool senderDrives = false;
  // The pair has GPU traffic under way the other way too (the host rail's share both ways applies:
  // each GPU's PCIe link then carries its own outgoing tail and the peer's incoming one).
  bool bothWays = false;
};

// One rule: messages up to maxBytes use channel (if the pair can), else the next rule applies.
struct Rule {
  std::size_t maxBytes;
  Channel channel;
};

// The rules per (peer class, GPU source?, destination, pattern); the last rule of each list is
// a catch-all the caller's caps always allow (kHostPipe or kEager).
class Table {
 public:
  static Table fromSettings();
  const std::vector<Rule>& rules(PeerClass p, bool gpuSrc, Dst d, Pattern pat) const;
  std::vector<Rule>& rules(PeerClass p, bool gpuSrc, Dst d, Pattern pat);
  // The receiver's rules for device data into a buffer on the source's own GPU (Query::sameGpu),
  // between two processes: there every device copy either side puts on the GPU after the other
  // pays the context switch (see sameGpuDriver), while the host pipeline's copies run on the copy
  // engines, so where neither side can map the other's buffer host staging beats the cuMem ring up
  // to a larger size than between two GPUs. Empty for self (one process): rules() then applies.
  std::vector<Rule>& sameGpuRules(PeerClass p, Pattern pat) {
    return sameGpuRules_[static_cast<int>(p)][static_cast<int>(pat)];
  }
  // The list select() walks for a query: the same-GPU list where it applies and is set.
  const std::vector<Rule>& rulesFor(const Query& q) const;
  std::string describe() const;
  Channel forced = Channel::kCount;  // CGDR_FORCE_CHANNEL (tests): used whenever the pair can
  // Two ranks whose buffers are on one GPU: work that two processes put on one GPU in turn costs a
  // context switch each time (~135 us on an H200 without MPS, against ~9 us where one process
  // makes every copy of a ping-pong: docs/performance.md). Where set, the pair's driver (the lower
  // world rank) makes every copy between them that either side could make: it pushes what it
  // sends and pulls what it receives, whatever the size; the other side copies only where the
  // driver cannot map its buffer.
  bool sameGpuDriver = true;
  // Who copies a device-to-GPU message on a single-copy channel that the receiver matched from its
  // envelope (its receive was not advertised): up to this size the receiver pulls, above it the
  // sender pushes into the receiver's buffer (so with traffic both ways each GPU copies only its
  // outgoing messages, as it does for advertised receives).
  std::size_t& pullLimit(PeerClass p, Pattern pat) { return pullLimit_[static_cast<int>(p)][static_cast<int>(pat)]; }
  std::size_t pullLimit(PeerClass p, Pattern pat) const {
    return pullLimit_[static_cast<int>(p)][static_cast<int>(pat)];
  }
  // A second rail beside NVLink for a large single copy between two GPUs: the sender copies the
  // last part of the message to host memory over its PCIe link (the host chunks) while its copy
  // engine pushes the rest over NVLink, and the receiver copies each host block to its GPU over
  // its own PCIe link. Tail bytes = railShare x (bytes - railOffset), rounded down to 64 KiB:
  // railShare is the host path's part of the two paths' bandwidth (B_host / (B_nvlink + B_host)),
  // railOffset the host path's extra start-up time a (its first block out, its last block in) in
  // NVLink bytes, a x B_nvlink: both paths then end together, (N - T) / B_nvlink = a + T / B_host.
  // Messages in flight together (bandwidth-bound traffic) hide most of that start: a smaller
  // offset there, and a smallest message (railMin), under which each message's extra host copies
  // cost more than the bytes they take off NVLink. railShare 0: off.
  // By [Query::bothWays][caps.otherGpuInvisible].
  double railShare[2][2] = {};
  std::size_t railOffset[2] = {0, 0};  // by Pattern: bandwidth-bound traffic hides most of the start
  std::size_t railMin[2] = {0, 0};     // by Pattern: messages under it cross NVLink alone
  std::size_t railMinBoth = 0;         // with traffic both ways, at least this too

 private:
  std::vector<Rule> rules_[static_cast<int>(PeerClass::kCount)][2][4][2];
  std::vector<Rule> sameGpuRules_[static_cast<int>(PeerClass::kCount)][2];
  std::size_t pullLimit_[static_cast<int>(PeerClass::kCount)][2] = {};
};

// Pure: the channel for one message.
Channel select(const Table& t, const Query& q);
// Pure: whether the sender should copy a message the receiver matched from its envelope (a device
// source, a GPU destination, above the pull limit); the caller still needs a single-copy channel
// and a buffer the sender can map.
bool senderCopies(const Table& t, const Query& q);
// Pure: whether a sender that found its receive advertised (q.dst kPosted, a single-copy channel)
// should leave the copy to the receiver instead of claiming it, provided the receiver can pull the
// source (the caller asks that only when this holds: else the sender's one copy beats two): on one
// GPU used in turns, where the receiver is the pair's driver.
bool leaveToReceiver(const Table& t, const Query& q);
// Pure: how many bytes at the end of a device-to-GPU message copied once (pushed) should go through
// host memory instead (Table::railShare, by q.bothWays); 0: all over the single-copy channel. Only
// between two GPUs (q.caps.otherGpu), never under a forced channel.
std::size_t hostRail(const Table& t, const Query& q);
// Pure: the same one way ([0]) and both ways ([1]); false where neither takes the rail.
bool hostRails(const Table& t, const Query& q, std::size_t tails[2]);
// The same, where whether GPU traffic flows the other way (q.bothWays) costs a walk of the messages
// in flight: bothWays() is asked only where the rail is taken one way or the other (its answer also
// tells the caller which governor applies).
template <class BothWays>
std::size_t hostRail(const Table& t, const Query& q, BothWays bothWays) {
  std::size_t tails[2];
  return hostRails(t, q, tails) ? tails[bothWays() ? 1 : 0] : 0;
}
constexpr std::size_t kRailGrain = 64 << 10;
// The host rail with traffic both ways, governed by what it achieved: the share of a new message's
// tail is the table's share x a factor per peer, lowered where the tails of earlier messages
// landed late and raised again where they landed first. There each GPU's PCIe link and each
// rank's CPU serve two host pipelines (its own tails and the peer's), and a share past what they
// carry makes every message wait for its tail (bibw on nvidia-h200-x2 fell from ~800 to 590-670
// GB/s at a share of 0.12-0.14 where 0.08-0.1 gained 3-10 %, and where the fall began moved from
// one machine instance to the next). One way the shares are measured and fixed. Both ways the
// shares are 0 by default: in windows of 64 messages the NVLink parts queue behind each other, so
// pushNs grows with the queue and late tails pass as on time (on two H100s the factor swung
// between 1/16 and 1 while the rail made such windows 21-32 % slower). Pure: the factor
// after one railed message whose NVLink part took pushNs (from the receiver's CTS to the sender's
// PUSHED) and whose tail landed lateNs after that PUSHED (< 0: the tail landed first). Kept within
// [kRailFactorMin, 1].
double railFactorAfter(double factor, std::int64_t pushNs, std::int64_t lateNs);
constexpr double kRailFactorMin = 1.0 / 16;
// Whether such a tail landed late: more than a quarter of the NVLink part's time after it (what
// railFactorAfter cuts the share for, down to its floor).
inline bool railTailLate(std::int64_t pushNs, std::int64_t lateNs) {
  return lateNs > (pushNs > 0 ? pushNs : 0) / 4;
}
// The tail hostRail() gives, scaled by the governor's factor (rounded down to kRailGrain).
inline std::size_t governedTail(std::size_t tail, double factor) {
  if (factor >= 1) return tail;
  auto t = static_cast<std::size_t>(static_cast<double>(tail) * (factor > 0 ? factor : 0));
  return t / kRailGrain * kRailGrain;
}
// Whether the pair can use a channel at all for this query.
bool usable(Channel c, const Query& q);

// The table in force (settings resolved once).
const Table& table();

}  // namespace cgdr::sched
