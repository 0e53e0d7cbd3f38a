// cgdr's engine for co-located peers: it owns every point-to-point message between ranks that
// share memory (any buffer kind), with its own envelopes and MPI matching (posted and unexpected
// queues per communicator context, posting order, non-overtaking per sender, wildcards, probes,
// truncation, synchronous and buffered modes, cancel). Progress happens inside the MPI calls cgdr
// intercepts; while the engine has work, blocking calls into the real MPI poll instead of block.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <optional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/msg.hpp"
#include "mem/memtype.hpp"
#include "base/op.hpp"
#include "base/status.hpp"
#include "channel/shm/endpoint.hpp"
#include "engine/comm_table.hpp"
#include "engine/gpu_paths.hpp"
#include "mem/classify.hpp"
#include "sched/select.hpp"

namespace cgdr::engine {

class ShmSend;
class ShmRecv;
class HeldRecv;

// A message that arrived before its receive was posted (or taken by a matched probe).
struct Unexpected {
  channel::shm::Peer* from = nullptr;
  int ctx = 0, src = 0, tag = 0;
  std::size_t size = 0;
  std::uint64_t msgId = 0;
  std::uint64_t addr = 0;
  bool rts = false, sync = false;
  bool probed = false;     // a probe reported it: its send can no longer be cancelled
  bool gpu = false;        // rendezvous of GPU bytes, with the sender's offer
  GpuOffer offer;
  std::uint64_t sentNs = 0;  // CGDR_TRACE_GPU: when the sender committed the envelope
  std::vector<char> data;  // eager payload
};

class ShmEngine {
 public:
  // Collective over `world`; without co-located peers (or with CGDR_LOCALITY=off) no engine runs.
  static base::Status start(MPI_Comm world);
  static void stop();
  static ShmEngine* get() { return instance_; }

  channel::shm::Peer* peerOfWorld(int w) { return ep_->peer(w); }
  std::recursive_mutex& mutex() { return mutex_; }

  // A send to a co-located peer; the op may be complete already.
  // `seen`: the send buffer's classification where the caller has it (trySendNow's).
  base::Result<std::unique_ptr<base::Op>> isend(const base::SendArgs& a, const CommInfo& c, channel::shm::Peer* p,
                                                const std::optional<mem::MemInfo>& seen = std::nullopt);
  // Blocking standard/ready send of a small message straight into the ring, when nothing is
  // queued to that peer; false if the caller must take the op path.
  // `seen` receives the buffer's classification when one was made.
  bool trySendNow(const base::SendArgs& a, const CommInfo& c, channel::shm::Peer* p, int* rc,
                  std::optional<mem::MemInfo>* seen = nullptr);
  // A receive of engine messages (a specific co-located source or MPI_ANY_SOURCE); mixed
  // wildcards also watch the real MPI and hold back later receives from remote peers.
  base::Result<std::unique_ptr<base::Op>> irecv(const base::RecvArgs& a, const CommInfo& c, bool mixed);
  // Blocking receive of a small message from a specific co-located source into contiguous host
  // memory, while nothing else is pending on the communicator: waits on that peer's ring and
  // copies the matching eager record straight into the buffer. False: take the general path.
  bool tryRecvNow(const base::RecvArgs& a, const CommInfo& c, MPI_Status* st, int* rc,
                  std::optional<mem::MemInfo>* seen = nullptr);
  // Starts a receive the caller owns (blocking receives keep it on their stack).
  void start(ShmRecv& op, const CommInfo& c);
  // Probe: engine messages only. With take, removes the message (matched probe).
  bool iprobe(const CommInfo& c, int src, int tag, MPI_Status* st, std::unique_ptr<Unexpected>* take);
  // Receives a message removed by a matched probe.
  base::Result<std::unique_ptr<base::Op>> mrecv(std::unique_ptr<Unexpected> m, const base::RecvArgs& a, const CommInfo& c);

  // Advances everything a little without blocking.
  void progress();
  // The shared-memory part only (no real-MPI calls): what the helper thread runs. True if it
  // moved anything.
  bool progressShm();
  // True while engine operations are pending (blocking real-MPI calls must poll meanwhile).
  bool busy() const { return pending_.load(std::memory_order_relaxed) > 0; }
  std::size_t segmentBytes() const { return ep_->segmentBytes(); }

  // For the operations (engine mutex held).
  channel::shm::Endpoint& endpoint() { return *ep_; }
  std::uint64_t newMsgId() { return ++lastMsgId_; }
  void track(ShmSend* s);
  void untrack(ShmSend* s);
  void queueSend(ShmSend* s);
  void post(ShmRecv* r);
  void unpost(ShmRecv* r);
  bool sendCtl(channel::shm::Peer& p, const channel::shm::CtlRecord& r);
  // A control record naming only a message (and a length): ACK, FIN, PUSHED, ABORT, cancel request.
  bool notify(channel::shm::Peer& p, channel::shm::CtlType type, std::uint64_t msgId, std::uint64_t len = 0);
  void addPending(int n) { pending_.fetch_add(n, std::memory_order_relaxed); }
  // A send that claimed its receiver's advert: its copy is polled by every step.
  void stream(ShmSend* s) { streaming_.push_back(s); }
  // A push held back to join a window of pushes moved by one copy-kernel launch
  // (mem::GpuCopy::startMany): taken where the copy may run on the kernel and `device`'s peer
  // stream still has earlier copies not seen done (so the copy would wait behind them anyway), or
  // other pushes are held. Held copies start at the start and the end of the next progress step,
  // or when a copy comes to a full window (that window starts, the new copy is held); false: the
  // caller starts it now.
  bool holdPush(ShmSend* s, const mem::GpuCopy::Many& m, int device);
  // The same for a receiver's pull (the message's envelope matched while a step drains the rings):
  // held while the step reads on, so that the pulls of the envelopes it finds go together.
  bool holdPull(ShmRecv* r, const mem::GpuCopy::Many& m, int device);
  // Whether holdPush / holdPull would hold a copy of n bytes now, by their own cheap conditions
  // (asked before the caller's costlier one: whether this GPU's SMs reach the other side).
  bool wouldHoldPush(std::size_t n, int device) const;
  bool wouldHoldPull(std::size_t n) const;
  void dropHeld(const base::Op* op);  // a held copy's operation finished (failed) before it started
  void releaseHeld();
  // An advertised receive leaves its sender's reach (cancel: forget=false; failure or destruction:
  // forget=true, a delivery already under way is then ignored). False if the sender claimed it
  // first (with forget=false the receive is then matched and awaits the bytes).
  bool withdrawAdvert(ShmRecv* r, bool forget);
  void expectData(channel::shm::Peer& p, std::uint64_t msgId, ShmRecv* r);
  // Receives with GPU copies in flight, polled by every step.
  void watchCopies(ShmRecv* r);
  void unwatchCopies(ShmRecv* r);
  // The GPU paths: nullptr in a build without CUDA paths, and after the program reset a GPU (what
  // they hold went with the context, mem::gpuResetSeen; a reset cgdr did not interpose counts once
  // mem::gpuStateLost found it, asked where GPU data meets this rank): from then on it takes no GPU part
  // in any message - its host buffers against a peer's GPU buffers stream through the host chunks,
  // with the peer doing the GPU copies.
  GpuPaths* gpu() { return gpu_ && !mem::gpuResetSeen() ? gpu_.get() : nullptr; }
  std::size_t eagerLimit() const { return eagerLimit_; }
  std::size_t eagerCredit() const { return eagerCredit_; }
  // Messages under way with p (engine mutex held): sends to it (queued, awaiting their CTS or ACK,
  // or copying), and receives from it (advertised GPU receives, or awaiting their data). The host
  // rail stays off where both directions are busy. Walk the in-flight sends: ask only for messages
  // the rail would otherwise take.
  bool sendingTo(const channel::shm::Peer& p) const;
  bool receivingFrom(const channel::shm::Peer& p) const;
  // Page-locks (and maps for the GPUs) this rank's and p's segments — the host chunks a GPU message
  // with p may be copied through, p's advert slots (deliveredFlag) — before the first one needs them: once per peer, at the first GPU message with it (engine mutex
  // held). The only way chunks get page-locked: a send from GPU memory calls it when posted
  // (ShmSend::tryPost), a receive into GPU memory or of a GPU message when its rendezvous starts
  // (ShmRecv::startRendezvous; a receive naming its source already when started). Every copy
  // through the chunks with GPU memory follows one of these. cudaHostRegister of a segment
  // costs milliseconds; done at the first block copied through the chunks (the host
  // pipeline, the rail), it could fall inside a bandwidth run's timed windows (100 windows of 1 MiB
  // messages took 32 ms instead of 10: docs/performance.md, thirty-second session).
  void pinFor(const channel::shm::Peer& p) {
    if (gpu() && !pinned_[p.local]) pinChunks(p);
  }
  // The `delivered` word of p's advert idx (claimed by this rank) for a copy of len bytes, as a
  // flag this rank's GPUs can set (p's segment mapped for them by pinFor); false (*f unusable)
  // where it is not mapped or len does not fit the word.
  bool deliveredFlag(channel::shm::Peer& p, std::uint64_t idx, std::uint64_t len, mem::DoneFlag* f);
  // The kFeature* bits this rank announces about its adverts (CGDR_CUDA_RESIDENT_NOTIFY).
  static std::uint64_t advertFeatures();
  // Counts a block copied between GPU memory and the chunks shared with p before pinFor(p): a path
  // that skipped the page-locking above (CGDR_STATS prints the count; the GPU tests fail on it).
  void checkPinned(const channel::shm::Peer& p) {
    if (gpu() && !pinned_[p.local]) ++stats_.unpinnedCopies;
  }
  // Which channel served a message (CGDR_STATS).
  void countChannel(sched::Channel c, std::size_t bytes);
  void forgetData(channel::shm::Peer& p, std::uint64_t msgId);
  // Buffered sends keep running after the user's call returned.
  void adopt(std::unique_ptr<base::Op> op);
  std::size_t buffered() {
    std::lock_guard lock(mutex_);
    return adopted_.size();
  }
  // Checks that a co-located peer is alive; fails the caller's wait if not.
  bool peerAlive(channel::shm::Peer& p);

  // Real-MPI ordering behind pending mixed MPI_ANY_SOURCE receives, per context (§3).
  bool holding(int ctx);
  void holdBehind(int ctx, ShmRecv* wildcard);
  void holdBehind(int ctx, HeldRecv* held);
  void dropFromOrder(const base::Op* op);

 private:
  struct CtxQueues {
    std::list<ShmRecv*> posted;
    std::list<std::unique_ptr<Unexpected>> unexpected;
  };

  ShmEngine() = default;
  // CGDR_STATS=1, at stop (shm_stats.cc): the message counters and channels, the GPU copies and the
  // exportable heap, the rendezvous trace, the channels by size.
  void printStats();
  void printGpuStats() const;
  void printTrace();
  void printSizeStats() const;
  bool drainControl(channel::shm::Peer& p);
  // One control record from p (about a receive of this rank, or a send); false where it broke p.
  bool onControl(channel::shm::Peer& p, const channel::shm::CtlRecord& c);
  // (type: c.type, read once by onControl)
  bool onRecvControl(channel::shm::Peer& p, const channel::shm::CtlRecord& c, channel::shm::CtlType type);
  bool onSendControl(channel::shm::Peer& p, const channel::shm::CtlRecord& c, channel::shm::CtlType type);
  bool drainMessages(channel::shm::Peer& p);
  bool step();
  bool handleRecord(channel::shm::Peer& p, const channel::shm::MsgHeader& h);
  void pumpSends(mem::PollPass* pass);
  void flushCtl();
  void reapAdopted();
  void pumpRealOrder();
  void breakPeer(channel::shm::Peer& p, const char* why);
  ShmRecv* matchPosted(CtxQueues& q, int src, int tag);
  CtxQueues& queuesOf(int ctx);
  void answerCancel(channel::shm::Peer& p, std::uint64_t msgId);
  // Adverts (shm_ops.hpp): a receive just posted on q is described to its sender where nothing
  // posted before it could take the messages it could; before a message record from p is
  // matched, p's unclaimed adverts are retracted and its claimed ones' receives leave the queue.
  void advertise(ShmRecv& r, CtxQueues& q);
  void resolveAdverts(channel::shm::Peer& p);
  void advertEnded(channel::shm::Peer& p, const channel::shm::CtlRecord& c, bool byWord = false);
  struct LiveAdvert {
    std::uint64_t idx;
    ShmRecv* recv;  // nullptr: the receive is gone, its delivery is ignored
    bool claimed;   // seen claimed (the receive left the posted queue)
  };
  std::vector<std::deque<LiveAdvert>> adverts_;  // per peer local index, oldest first
  std::vector<char> pinned_;  // per peer local index: pinFor done
  std::vector<char*> segMapped_;  // per peer local index: its segment's address on the GPUs (pinFor), or nullptr
  // The `delivered` words of p's live adverts (set by a sender's GPU instead of ADVERT_DONE),
  // polled where this rank announced it does (CGDR_CUDA_RESIDENT_NOTIFY; its senders follow what
  // it announced, not their own setting).
  bool drainDelivered(channel::shm::Peer& p);
  bool pollDelivered_ = false;
  void pinChunks(const channel::shm::Peer& p);

  static ShmEngine* instance_;
  std::unique_ptr<channel::shm::Endpoint> ep_;
  std::unique_ptr<GpuPaths> gpu_;  // after ep_: unregisters the segments before they are unmapped
  std::vector<ShmRecv*> copying_;
  struct HeldCopy {
    ShmSend* send;  // a push, or
    ShmRecv* recv;  // a pull
    mem::GpuCopy::Many copy;
    int device;
  };
  std::vector<HeldCopy> held_;  // at most mem::kGatherMax
  bool draining_ = false;       // step() is reading the rings: matched pulls may be held
  std::recursive_mutex mutex_;
  std::unordered_map<int, CtxQueues> queues_;
  std::unordered_map<std::uint64_t, ShmSend*> sends_;               // in flight, by msgId
  std::unordered_map<std::uint64_t, ShmRecv*> dataRecvs_;           // by dataKey()
  static std::uint64_t dataKey(const channel::shm::Peer& p, std::uint64_t msgId) {
    return (std::uint64_t{p.local} << 48) ^ msgId;
  }
  std::vector<std::list<ShmSend*>> outbound_;                       // per peer local index
  std::vector<std::list<channel::shm::CtlRecord>> ctlBacklog_;      // per peer local index
  std::list<ShmSend*> streaming_;
  std::vector<std::unique_ptr<base::Op>> adopted_;  // buffered ShmSends the user no longer waits for
  struct OrderItem {
    ShmRecv* wildcard;
    HeldRecv* held;
  };
  std::unordered_map<int, std::list<OrderItem>> realOrder_;
  std::atomic<int> holds_{0};
  std::atomic<int> pending_{0};
  // Counters (CGDR_STATS=1 prints them at MPI_Finalize).
  struct Stats {
    std::uint64_t eager = 0, rendezvous = 0, singleCopy = 0, pushed = 0, pulled = 0, pipelined = 0;  // pulled: into GPU buffers
    std::uint64_t railed = 0, railBytes = 0;  // receiver side: pushes with a host-rail tail, and its bytes
    std::uint64_t railedBoth = 0;             // of them, with traffic both ways
    std::uint64_t railLate = 0, railEarly = 0;  // of those, tails that landed late (the governor cuts, down to its floor), or first
    std::uint64_t advertised = 0, advertsClaimed = 0, advertsRetracted = 0;  // receiver side
    std::uint64_t advertsDelivered = 0;  // of those claimed: ended by their `delivered` word
    std::uint64_t deliveredByGpu = 0;    // sender side: adverts whose word the resident kernel set
    std::uint64_t advertWaits = 0, advertWaitFound = 0, advertWaitRanOut = 0;  // senders waiting for adverts
    std::uint64_t advertWaitsNonBlocking = 0, advertWaitFoundNonBlocking = 0;  // of those: within MPI_Isend & co.
    std::uint64_t advertWaitNs = 0, advertWaitLongestNs = 0;  // of the waits that found one: in all, longest
    std::uint64_t heldPushes = 0, heldPulls = 0;  // held copies the copy kernel moved (releaseHeld)
    std::uint64_t unpinnedCopies = 0;  // GPU copies through host chunks not page-locked (checkPinned)
    std::size_t unexpectedBytes = 0, peakUnexpectedBytes = 0;
    std::uint64_t channel[static_cast<int>(sched::Channel::kCount)] = {};
    std::uint32_t bySize[65] = {};  // per bit length of the size: channels seen (bit mask)
  } stats_;

 public:
  Stats& stats() { return stats_; }
  // CGDR_TRACE_GPU: where a GPU rendezvous spends its time, as mean durations per step printed
  // at the end (tuning; off by default, then each point costs one branch).
  enum TracePoint {
    kTrSendBuild,     // sender: classify, select, offer until the envelope is in the ring
    kTrEnvelope,      // envelope committed -> the receiver handles it (matched)
    kTrRecvChoose,    // receiver: caps and channel choice
    kTrCopyIssue,     // cudaMemcpyAsync + event record (the side that copies)
    kTrCopyRun,       // copy issued -> seen done
    kTrCts,           // CTS sent -> the sender handles it
    kTrPushed,        // PUSHED or ADVERT_DONE sent -> the receiver handles it
    kTrRecvFinish,    // receiver: copy seen done -> the receive request completed
    kTrTurnaround,    // a receive completed -> this rank's next GPU send starts (application, MPI entry)
    kTrRecvReturn,    // a blocking receive completed -> its MPI call returns to the application
    kTrSendEntry,     // a send's MPI call entered -> its envelope starts (classify, operation)
    kTrDoneAdvert,    // this rank told a peer its copy was done -> its next receive advertised to that peer
    kTrDoneLook,      // a peer's done notice sent -> this rank's next GPU send to it looks for an advert
    kTrCount
  };
  static bool tracing();
  static std::uint64_t traceNow();  // ns, CLOCK_MONOTONIC (the same in every namespace of a host)
  // CGDR_TRACE_GPU only (zero otherwise); atomic: MPI_THREAD_MULTIPLE callers read and clear them.
  std::atomic<std::uint64_t> lastRecvDone{0};  // when the last traced receive completed
  std::atomic<std::uint64_t> sendEntered{0};   // when the current send's MPI call was entered
  // A peer's PUSHED or ADVERT_DONE handled: its way here (pushed), and when the peer sent it (for
  // this rank's next send to it, done-look).
  void traceDoneSeen(channel::shm::Peer& p, std::uint64_t sentNs) {
    if (!sentNs || !tracing()) return;
    trace(kTrPushed, sentNs);
    p.doneSeenNs = sentNs;
  }
  void trace(TracePoint p, std::uint64_t since) {
    std::uint64_t t = traceNow(), d = t > since ? t - since : 0;
    std::lock_guard lock(traceLock_);  // steps are traced from every thread that sends or receives
    traceSum_[p] += d;
    ++traceCount_[p];
    if (traceSamples_[p].size() < kTraceSamples)
      traceSamples_[p].push_back(static_cast<std::uint32_t>(std::min<std::uint64_t>(d, ~0u)));
  }

 private:
  static constexpr std::size_t kTraceSamples = 1 << 20;  // per point: medians of the first million
  std::uint64_t traceSum_[kTrCount] = {}, traceCount_[kTrCount] = {};
  std::vector<std::uint32_t> traceSamples_[kTrCount];
  std::mutex traceLock_;
  std::uint64_t lastMsgId_ = 0;
  int lastCtx_ = -1;                 // one-entry cache of the queues of the last context used
  CtxQueues* lastQueues_ = nullptr;
  std::size_t eagerLimit_ = 0, eagerCredit_ = 0;
  bool inProgress_ = false;
  std::uint32_t steps_ = 0;  // progress steps, for what is done only now and then
};

}  // namespace cgdr::engine
