// The engine's send and receive operations and their protocol state machines:
//   eager:      envelope + data in the message ring (synchronous mode waits for an ACK);
//   rendezvous: envelope (RTS) first; the receiver, once matched, either copies the data itself
//               (process_vm_readv, then FIN) or answers CTS, and the sender streams the bytes
//               through its bulk chunks (DATA records), the receiver copying them out as they come.
// GPU messages always rendezvous (unless CGDR_CUDA_EAGER_LIMIT says otherwise) with an offer after
// the envelope (gpu_paths.hpp); the receiver picks the channel (sched::select):
//   cuda-ipc / cuda-vmm-zc: one copy over NVLink. Push where the sender can map the receiver's
//                   buffer (CTS(push) names a slot describing it; the sender copies, then PUSHED),
//                   else the receiver pulls from the sender's buffer, then FIN;
//   cuda-vmm-stage: CTS(dev ring): the sender copies blocks into its cuMem ring (DEVDATA records),
//                   the receiver pulls each over NVLink while the sender fills the next;
//   host pipeline:  CTS(host chunks): GPU sides copy asynchronously to/from the page-locked chunks
//                   (cuda-staged: the sender's D2H of one block overlaps the receiver's H2D of another).
//   advertised:     a receive posted before its message came, into a GPU buffer the sender can map,
//                   is described to that sender in the receiver's segment (channel/shm/advert.hpp);
//                   a send that finds it as the oldest advert, with nothing of its own in flight
//                   that the receive could match first, claims it and copies straight into the
//                   buffer (cuda-ipc / cuda-vmm-zc, push), then ADVERT_DONE. No envelope, no match
//                   at the receiver, no CTS. Any message record from that sender makes the
//                   receiver retract its adverts still unclaimed first (they are ordinary posted
//                   receives again), so matching order is MPI's.
// Either side may abort a stream whose copy failed (ABORT records).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>

#include "base/msg.hpp"
#include "base/op.hpp"
#include "engine/gpu_paths.hpp"
#include "engine/msg_data.hpp"
#include "engine/shm_engine.hpp"
#include "mem/gpu_copy.hpp"
#include "sched/select.hpp"

namespace cgdr::engine {

// One block on its way (an asynchronous GPU copy and the chunk or ring slot it uses).
struct CopyBlock {
  mem::GpuCopy copy;
  std::uint32_t slot = 0;
  bool devSlot = false;  // a block of a cuMem ring, else a host chunk (or nothing: pulls)
  std::uint64_t offset = 0, len = 0;
  std::uint64_t issuedNs = 0;  // CGDR_TRACE_GPU
};

class ShmSend final : public base::Op {
 public:
  ShmSend(ShmEngine& e, channel::shm::Peer& p, const base::SendArgs& a, const CommInfo& c, SendData data);
  ~ShmSend() override;
  bool poll() override;
  int cancel() override;

  // Engine side (engine mutex held).
  bool tryPost();
  bool pump(mem::PollPass* pass = nullptr);
  // target: the receiver's buffer, when it asked for a push.
  // tail: of a push, the last bytes to stream through the host chunks meanwhile (the host rail).
  void onCts(std::uint64_t len, std::uint64_t mode, const GpuOffer* target, std::uint64_t tail = 0);
  void onFin();
  void onAck();
  void onCancelReply(bool withdrawn);
  void fail(const base::Status& s);
  bool finished() const { return state_ == State::kDone; }
  bool queued() const { return state_ == State::kQueued; }
  std::uint64_t msgId() const { return msgId_; }
  // A push held by the engine (ShmEngine::holdPush): the copy it waits to start, and its start,
  // with its window (`started`: the copy kernel took it) or alone (issued here).
  mem::GpuCopy* heldCopy() { return &pushBlock_.copy; }
  void releaseHeld(bool started);
  channel::shm::Peer& peer() { return peer_; }
  const channel::shm::Peer& peer() const { return peer_; }

 private:
  enum class State { kQueued, kWaitAck, kWaitCts, kStreaming, kDone };
  void finish();
  bool pumpHost();
  bool pumpAsync();
  bool pumpPush(mem::PollPass* pass);
  bool startPush(const GpuOffer& target, std::uint64_t n);
  // The receiver's buffer `t` describes, mapped here (channel `prefer` first); nullptr if not.
  void* mapTarget(const GpuOffer& t, sched::Channel prefer, sched::Channel* used);
  // Starts the one copy into the mapped buffer; false (reported) if it cannot start.
  // mayHold: the copy may wait to join a window moved by the copy kernel (ShmEngine::holdPush);
  // resident: started alone (now, or released alone), it may go to the resident copy kernel
  // (GpuPaths::residentOk); flag: the advert's `delivered` word that kernel then sets itself
  // (ShmEngine::deliveredFlag: the receiver learns of the copy without this CPU in between).
  base::Status issuePush(void* dst, const GpuOffer& t, sched::Channel used, mem::Issue issue, std::uint64_t n,
                         bool mayHold = false, bool resident = false, const mem::DoneFlag* flag = nullptr);
  // Where CGDR_TRACE_GPU is on: the steps that ended since the last GPU message, and this one's start
  // (0 for host data, or with tracing off).
  std::uint64_t traceStart(bool gpu);
  // Whether the message goes in the ring: it fits there (`fits`), and GPU data only where the
  // scheduler says so for this peer, pattern and source.
  bool goesEager(bool fits, bool gpu, GpuPaths* paths) const;
  // The oldest advert of the receiver, if this send may and can deliver into it; then claimed.
  // *none: the receiver had no advert posted at all.
  bool tryClaim(std::uint64_t t0, bool* none);
  // tryClaim's parts: whether the scheduler has this send (n bytes, GPU paths `paths`) copy into
  // the advertised receive t (and over which channel); a claimed advert in the statistics.
  bool pushesInto(GpuPaths* paths, std::size_t n, const GpuOffer& t, GpuPaths::Place place,
                  sched::Channel* ch) const;
  void countClaim(sched::Channel used, std::size_t n);
  // A send that found no advert: whether to hold its envelope back a little longer (starts the wait).
  bool advertWaitRuns();
  // A non-blocking send that found no advert: waits for it here, a little; true if it claimed it.
  bool spinForAdvert(std::uint64_t t0);
  void abort(const base::Status& s);

  ShmEngine& e_;
  channel::shm::Peer& peer_;
  SendData data_;
  int ctx_, src_, tag_;
  base::SendMode mode_;
  bool blocking_;
  std::uint64_t advertWaitFrom_ = 0;  // ns (traceNow): the beginning of the wait for an advert, once begun
  std::uint64_t msgId_ = 0;
  std::uint64_t toSend_ = 0, sent_ = 0;
  bool devRing_ = false;  // streaming through the cuMem ring (else host chunks)
  bool async_ = false;    // GPU source copied block by block with the copy engine (with push_: the
                          // host rail, the tail streaming through host chunks beside the push)
  bool push_ = false;     // one copy straight into the receiver's buffer (of its first pushLen_ bytes)
  bool pushPending_ = false;  // that copy has not been seen done yet
  std::uint64_t pushLen_ = 0;
  CopyBlock pushBlock_;
  bool held_ = false;  // the push waits in the engine's window (heldCopy not started yet)
  void* heldDst_ = nullptr;
  mem::Issue heldIssue_ = mem::Issue::kMemcpy;
  mem::CopyIds heldIds_;
  bool heldResident_ = false;  // started alone, the copy may go to the resident copy kernel
  mem::DoneFlag heldFlag_;     // and set the advert's `delivered` word (unusable: none)
  std::uint64_t advert_ = 0;  // the receiver's advert this send claimed (its completion names it)
  GpuPaths::Ring ring_;
  std::deque<CopyBlock> inflight_;
  State state_ = State::kQueued;
  bool cancelPending_ = false;
  bool counted_ = false;
};

class ShmRecv final : public base::Op {
 public:
  ShmRecv(ShmEngine& e, const base::RecvArgs& a, const CommInfo& c, RecvTarget t, bool mixed);
  ~ShmRecv() override;
  bool poll() override;
  int cancel() override;

  bool matches(int src, int tag) const {
    return (src_ == MPI_ANY_SOURCE || src_ == src) && (tag_ == MPI_ANY_TAG || tag_ == tag);
  }
  bool mixed() const { return mixed_; }
  int source() const { return src_; }
  std::size_t capacity() const { return target_.capacity(); }
  int tag() const { return tag_; }
  // Advertising (engine side): whether this posted receive may be advertised to its sender, with
  // the description of its buffer that sender can map (CGDR_CUDA_PUSH=posted or always).
  channel::shm::Peer* sourcePeer() const { return source_; }
  bool advertisable() const;             // cheap: the receive's own properties
  bool describeForAdvert(GpuOffer* o);    // advertisable() first
  std::uint64_t advert() const { return advert_; }
  void setAdvert(std::uint64_t idx) { advert_ = idx; }
  // Its sender claimed the advert: matched, the sender delivers (posted -> receiving).
  void claimedBy(channel::shm::Peer& p);
  void onAdvertDone(channel::shm::Peer& p, std::uint64_t len);
  bool posted() const { return state_ == State::kPosted; }
  bool finished() const { return state_ == State::kDone || state_ == State::kLanded; }
  int ctx() const { return ctx_; }
  // Engine side (engine mutex held).
  void deliverEager(channel::shm::Peer& from, const Unexpected& env, const char* payload);
  void startRendezvous(channel::shm::Peer& from, const Unexpected& env);
  void onData(channel::shm::Peer& from, std::uint32_t chunk, std::uint64_t offset, std::uint64_t len);
  void onDevData(channel::shm::Peer& from, const channel::shm::CtlRecord& r);
  void onPushed(channel::shm::Peer& from, std::uint64_t len);
  // Retires finished GPU copies; true once none is in flight.
  bool pollCopies(mem::PollPass* pass = nullptr);
  // A pull held by the engine (ShmEngine::holdPull): the copy it waits to start, and its start,
  // with its window (`started`: the copy kernel took it) or alone (issued here).
  mem::GpuCopy* heldCopy() { return &inflight_.front().copy; }
  void releaseHeld(bool started);
  bool gpuTarget() const { return target_.gpu(); }
  void fail(const base::Status& s);
  // Mixed MPI_ANY_SOURCE: tries to take a message from the real MPI; true if it did.
  bool probeReal();

 private:
  // kLanded: the bytes are in the landing area; the owner's poll() finishes the receive (unpack,
  // copy to the GPU, status), so the helper thread never calls into MPI or CUDA.
  enum class State { kPosted, kReceiving, kLanded, kReal, kDone };
  void complete(std::size_t received, std::size_t size);
  void finalize();
  void setEnvelope(int src, int tag);
  // startRendezvous of a message from a GPU buffer: the channel for q (whose caps it fills in), then
  // this rank's pull, the sender's push, or the sender's stream (the cuMem ring or host chunks).
  void startGpuRendezvous(channel::shm::Peer& from, const Unexpected& env, sched::Query q, GpuPaths* paths,
                          std::uint64_t t0);
  bool startPull(channel::shm::Peer& from, const Unexpected& env, sched::Channel ch);
  bool startPush(channel::shm::Peer& from, const GpuOffer& target, sched::Channel ch, std::uint64_t tail);
  void sendCts(channel::shm::Peer& from, channel::shm::StreamMode mode, std::uint32_t chunk = 0,
               std::uint64_t tail = 0);
  bool chooseDestination(bool async);
  void abort(const base::Status& s);

  ShmEngine& e_;
  base::RecvArgs args_;
  RecvTarget target_;
  int ctx_;
  int src_, tag_;
  bool mixed_;
  State state_ = State::kPosted;
  channel::shm::Peer* from_ = nullptr;
  channel::shm::Peer* source_ = nullptr;  // the co-located source of a specific-source receive
  std::uint64_t msgId_ = 0;
  std::size_t size_ = 0, expect_ = 0, got_ = 0;
  char* dst_ = nullptr;     // where the bytes go: the user's contiguous buffer or the landing area
  bool dstOnHost_ = true;   // finish() must unpack / copy the landing area
  bool dstAsync_ = false;   // host chunks are copied to a GPU destination with the copy engine
  bool pulling_ = false;    // one copy from the sender's buffer, then FIN
  bool pushed_ = false;     // asked the sender to copy into the buffer (it may stream instead)
  bool pushDone_ = false;   // its PUSHED came
  std::uint64_t railTail_ = 0;  // of a push: the last bytes, asked to come through host chunks instead
  // The rail's governor (from_->railFactor, with traffic both ways): whether the tail was cut
  // with traffic both ways, when the CTS went and the PUSHED came, and whether the PUSHED came last.
  bool railBoth_ = false, railPushLast_ = false;
  std::uint64_t railCtsNs_ = 0, railPushNs_ = 0;
  std::uint64_t advert_ = 0;  // advertised to the sender as this idx (until retracted or delivered)
  int device_ = -1;         // the GPU this rank copies with
  mem::Issue issue_ = mem::Issue::kMemcpy;  // how copies from the sender's GPU are issued
  GpuPaths::Place place_ = GpuPaths::Place::kUnknown;  // where the sender's bytes are, seen from device_
  bool held_ = false;         // the pull waits in the engine's window (inflight_'s one block not started)
  const void* heldSrc_ = nullptr;
  mem::CopyIds heldIds_;
  bool heldResident_ = false;  // started alone, the copy may go to the resident copy kernel
  std::uint64_t doneNs_ = 0;  // CGDR_TRACE_GPU: when the pull was seen done
  std::deque<CopyBlock> inflight_;
  std::unique_ptr<base::Op> real_;  // mixed: the real MPI's receive of the message it matched
};

}  // namespace cgdr::engine
