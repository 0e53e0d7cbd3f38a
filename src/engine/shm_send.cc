#include <algorithm>
#include <cstring>
#include <utility>

#include "base/config.hpp"
#include "base/errors.hpp"
#include "base/log.hpp"
#include "engine/shm_ops.hpp"
#include "sched/tracer.hpp"

namespace cgdr::engine {
namespace shm = channel::shm;

namespace {
base::Setting<base::Bytes> gRailBlock("CGDR_CUDA_HOST_RAIL_BLOCK", "1M", "bytes",
                                      "The host rail's blocks (CGDR_CUDA_HOST_RAIL_SHARE): neighbouring host chunks "
                                      "taken together (at most half of them), so each copy to and from host memory "
                                      "moves this much (each copy has a fixed cost of a few us).");
base::Setting<double> gAdvertWait("CGDR_CUDA_ADVERT_WAIT", "2", "us",
                                  "A send of GPU data to a co-located peer whose receives were lately advertised "
                                  "before their messages came waits up to this long for the advert of its receive "
                                  "before it sends an envelope (a blocking send while it progresses, a non-blocking "
                                  "one within its call; 0: never waits).",
                                  base::DoubleRange{0, 1'000'000});
std::uint64_t advertWaitNs() {
  static const std::uint64_t ns = static_cast<std::uint64_t>(gAdvertWait.get() * 1000.0);  // (0-1 s: its range)
  return ns;
}
}  // namespace

ShmSend::ShmSend(ShmEngine& e, shm::Peer& p, const base::SendArgs& a, const CommInfo& c, SendData data)
    : e_(e), peer_(p), data_(std::move(data)), ctx_(c.ctx), src_(c.rank), tag_(a.tag), mode_(a.mode),
      blocking_(a.blocking) {
  comm = c.comm;
  base::setEmptyStatus(&status);
  e_.addPending(1);
  counted_ = true;
}

ShmSend::~ShmSend() {
  if (counted_) e_.addPending(-1);
}

void ShmSend::finish() {
  if (state_ == State::kDone) return;
  state_ = State::kDone;
  if (held_) {  // failed before its window started: the copy never runs
    e_.dropHeld(this);
    held_ = false;
  }
  e_.untrack(this);
  if (counted_) {
    e_.addPending(-1);
    counted_ = false;
  }
}

std::uint64_t ShmSend::traceStart(bool gpu) {
  if (!ShmEngine::tracing()) return 0;
  // This send's MPI call: traced where it is a GPU message, forgotten anyway.
  std::uint64_t entered = e_.sendEntered.exchange(0);
  if (!gpu) return 0;
  std::uint64_t t0 = ShmEngine::traceNow();
  if (std::uint64_t done = e_.lastRecvDone.exchange(0)) e_.trace(ShmEngine::kTrTurnaround, done);
  if (entered) e_.trace(ShmEngine::kTrSendEntry, entered);
  if (std::uint64_t done = peer_.doneSeenNs.exchange(0)) e_.trace(ShmEngine::kTrDoneLook, done);
  return t0;
}

bool ShmSend::goesEager(bool fits, bool gpu, GpuPaths* paths) const {
  if (!fits || !gpu) return fits;
  std::size_t n = data_.size();
  sched::Query q{paths ? paths->peerClass(peer_.worldRank) : sched::PeerClass::kSameNamespace, data_.mem().kind,
                 sched::Dst::kUnknown, n, sched::tracer().pattern(peer_.worldRank),
                 paths ? paths->senderCaps(peer_.worldRank) : sched::Caps{}};
  q.caps.contiguous = data_.contiguous();
  q.caps.vmmZc = false;  // known below, and only where it matters: is the source exportable?
  if (sched::select(sched::table(), q) != sched::Channel::kEager) return false;
  if (paths && q.caps.contiguous && data_.gpuData() && data_.mem().kind == mem::MemKind::kDevice &&
      paths->zeroCopyable(peer_.worldRank, data_.gpuData(), n, data_.mem())) {
    q.caps.vmmZc = true;
    return sched::select(sched::table(), q) == sched::Channel::kEager;
  }
  return true;
}

bool ShmSend::tryPost() {
  std::lock_guard producer(peer_.sendLock);
  std::size_t n = data_.size();
  bool sync = mode_ == base::SendMode::kSync;
  bool gpu = n > 0 && data_.mem().onGpu();
  if (gpu) e_.pinFor(peer_);
  std::uint64_t t0 = traceStart(gpu);
  bool none = false;
  if (gpu && tryClaim(t0, &none)) return true;
  if (none && blocking_ && advertWaitRuns()) return false;  // queued meanwhile: progress tries again
  if (none && !blocking_ && spinForAdvert(t0)) return true;
  bool fits = n <= e_.eagerLimit() && peer_.out.withinCredit(peer_.eagerSent + n, e_.eagerCredit());
  GpuOffer offer;
  GpuPaths* paths = e_.gpu();
  bool eager = goesEager(fits, gpu, paths);
  const char* bytes = nullptr;
  if (eager || !gpu) {  // host bytes: the ring's payload, or what the receiver may read in place
    auto v = data_.hostView();
    if (!v.isOk()) {
      fail(v.status());
      return true;
    }
    bytes = v.value();
  } else {
    offer.kind = static_cast<std::int32_t>(data_.mem().kind);
    if (paths && data_.gpuData() && data_.mem().kind == mem::MemKind::kDevice)
      paths->offer(peer_.worldRank, data_.gpuData(), n, data_.mem(), &offer);
  }
  std::size_t payload = eager ? n : gpu ? sizeof(GpuOffer) : 0;
  auto* h = peer_.out.reserve(static_cast<std::uint32_t>(sizeof(shm::MsgHeader) + payload));
  if (!h) return false;
  msgId_ = e_.newMsgId();
  h->type = static_cast<std::uint16_t>(eager ? shm::RecType::kEager : shm::RecType::kRts);
  h->flags = static_cast<std::uint16_t>((sync ? shm::kFlagSync : 0) | (gpu && !eager ? shm::kFlagGpu : 0));
  h->ctx = ctx_;
  h->src = src_;
  h->tag = tag_;
  h->seq = peer_.seqOut++;
  h->size = n;
  h->msgId = msgId_;
  h->addr = eager || gpu ? 0 : reinterpret_cast<std::uint64_t>(bytes);
  h->sentNs = t0 && !eager ? ShmEngine::traceNow() : 0;
  if (eager && n) std::memcpy(h + 1, bytes, n);
  if (!eager && gpu) std::memcpy(h + 1, &offer, sizeof offer);
  peer_.out.commit();
  if (eager) {
    ++e_.stats().eager;
    e_.countChannel(sched::Channel::kEager, n);
    peer_.eagerSent += n;
    if (!sync) {
      finish();
      return true;
    }
    state_ = State::kWaitAck;
  } else {
    ++e_.stats().rendezvous;
    state_ = State::kWaitCts;
    if (t0) e_.trace(ShmEngine::kTrSendBuild, t0);
  }
  e_.track(this);
  return true;
}

bool ShmSend::pump(mem::PollPass* pass) {
  if (state_ != State::kStreaming) return true;
  return push_ ? pumpPush(pass) : async_ ? pumpAsync() : pumpHost();
}

// The copy into the receiver's buffer: once it finished, the receiver is told (PUSHED) and the
// send is complete, unless the host rail's tail is still streaming (pumpAsync finishes it then).
// `pass`: a window of pushes shares cgdr's streams; ask about each stream once.
bool ShmSend::pumpPush(mem::PollPass* pass) {
  if (held_) return false;
  if (pushPending_) {
    CopyBlock& b = pushBlock_;
    if (b.copy.done(pass)) {
      if (!b.copy.error().isOk()) {
        abort(b.copy.error());
        return true;
      }
      if (b.issuedNs) e_.trace(ShmEngine::kTrCopyRun, b.issuedNs);
      pushPending_ = false;
      if (advert_ && b.copy.flagged()) ++e_.stats().deliveredByGpu;  // the advert's word is set: no record
      else if (advert_) e_.notify(peer_, shm::CtlType::kAdvertDone, advert_, pushLen_);
      else e_.notify(peer_, shm::CtlType::kPushed, msgId_, pushLen_);
    } else if (!async_) {
      return false;
    }
  }
  if (async_) return pumpAsync();
  finish();
  return true;
}

// The receiver's buffer as described, mapped for this rank's GPU (`prefer` first, then the other
// handle kind); nullptr where it cannot be mapped.
void* ShmSend::mapTarget(const GpuOffer& t, sched::Channel prefer, sched::Channel* used) {
  GpuPaths* paths = e_.gpu();
  int device = data_.mem().device;
  bool zcFits = (t.flags & GpuOffer::kZc) && t.zcOffset <= t.zcSize && toSend_ <= t.zcSize - t.zcOffset;
  sched::Channel order[2] = {sched::Channel::kCudaIpc, sched::Channel::kCudaVmmZc};
  if (prefer == sched::Channel::kCudaVmmZc) std::swap(order[0], order[1]);
  for (sched::Channel c : order) {
    if (c == sched::Channel::kCudaIpc ? !(t.flags & GpuOffer::kIpc) : !zcFits) continue;
    if (void* dst = paths->peerAddress(peer_.worldRank, t, c, device)) {
      *used = c;
      return dst;
    }
  }
  CGDR_LOG(kDebug, kCuda, "cannot map the GPU buffer of rank %d", peer_.worldRank);
  return nullptr;
}

base::Status ShmSend::issuePush(void* dst, const GpuOffer& t, sched::Channel used, mem::Issue issue,
                                std::uint64_t n, bool mayHold, bool resident, const mem::DoneFlag* flag) {
  int device = data_.mem().device;
  mem::CopyIds ids{GpuPaths::peerMemoryId(peer_.worldRank, t, used), data_.mem().bufferId};
  if (mayHold) {
    pushBlock_ = CopyBlock{};
    pushBlock_.len = n;
    pushLen_ = n;
    pushPending_ = true;
    push_ = true;
    heldDst_ = dst;
    heldIssue_ = issue;
    heldIds_ = ids;
    heldResident_ = resident;
    heldFlag_ = flag ? *flag : mem::DoneFlag{};
    held_ = e_.holdPush(this, mem::GpuCopy::Many{dst, data_.gpuData(), n}, device);
    if (held_) return base::Status::ok();
  }
  CopyBlock b;
  b.len = n;
  std::uint64_t t0 = ShmEngine::tracing() ? ShmEngine::traceNow() : 0;
  base::Status st =
      b.copy.start(dst, data_.gpuData(), n, device, mem::CopyDir::kPeer, issue, ids, resident, flag);
  if (t0) {
    e_.trace(ShmEngine::kTrCopyIssue, t0);
    b.issuedNs = ShmEngine::traceNow();
  }
  if (!st.isOk()) return st;
  pushBlock_ = std::move(b);
  pushLen_ = n;
  pushPending_ = true;
  push_ = true;
  return st;
}

void ShmSend::releaseHeld(bool started) {
  if (!held_) return;
  held_ = false;
  if (ShmEngine::tracing()) pushBlock_.issuedNs = ShmEngine::traceNow();
  if (started) return;
  base::Status st = pushBlock_.copy.start(heldDst_, data_.gpuData(), pushLen_, data_.mem().device,
                                          mem::CopyDir::kPeer, heldIssue_, heldIds_, heldResident_, &heldFlag_);
  if (!st.isOk()) abort(st);
}

// One copy of the first n bytes of this rank's GPU buffer into the receiver's (mapped through its
// description); false (the bytes are then streamed) where it cannot be mapped or the copy cannot start.
bool ShmSend::startPush(const GpuOffer& t, std::uint64_t n) {
  if (!e_.gpu() || !data_.gpuData() || data_.mem().kind != mem::MemKind::kDevice || n == 0) return false;
  sched::Channel used = sched::Channel::kCount;
  void* dst = mapTarget(t, sched::Channel::kCudaIpc, &used);
  if (!dst) return false;
  GpuPaths::Place place = e_.gpu()->placeOf(t, data_.mem().device);
  base::Status st = issuePush(dst, t, used, GpuPaths::issueFor(place), n, false,
                              e_.gpu()->residentOk(t, used, place, data_.mem().device, n));
  if (!st.isOk()) {
    CGDR_LOG(kWarn, kCuda, "copy into the GPU buffer of rank %d failed (%s): streaming instead", peer_.worldRank,
             st.message().c_str());
    return false;
  }
  return true;
}

// A receive the peer advertised before this send came (shm_ops.hpp): this send may deliver into it
// only if it is the peer's oldest advert still posted, names this send's communicator and tag,
// holds its bytes, and the peer had taken every message record of this rank when it posted it
// (else one of those could match it first; the peer retracts it on reading them). The scheduler
// must name a single-copy channel for the pair and the buffer must map here; then the advert is
// claimed (it may have been retracted meanwhile) and the copy starts. Engine mutex and the
// peer's sendLock held.
bool ShmSend::tryClaim(std::uint64_t t0, bool* none) {
  GpuPaths* paths = e_.gpu();
  std::size_t n = data_.size();
  if (!paths || !data_.contiguous() || !data_.gpuData() || data_.mem().kind != mem::MemKind::kDevice) return false;
  shm::Advert a;
  if (!peer_.advertsOut.oldest(&a)) {
    *none = true;
    return false;
  }
  if (a.ctx != ctx_ || a.tag != tag_ || a.seq != peer_.seqOut || n > a.capacity || a.payloadBytes != sizeof(GpuOffer))
    return false;
  GpuOffer t;
  std::memcpy(&t, a.payload, sizeof t);
  GpuPaths::Place place = paths->placeOf(t, data_.mem().device);
  sched::Channel ch;
  if (!pushesInto(paths, n, t, place, &ch)) return false;
  toSend_ = n;
  sched::Channel used = ch;
  void* dst = mapTarget(t, ch, &used);
  if (!dst || !peer_.advertsOut.claim(a.idx)) {
    toSend_ = 0;
    return false;
  }
  advert_ = a.idx;  // matched: this send is that receive's message now
  state_ = State::kStreaming;
  peer_.advertsInTime = true;
  countClaim(used, n);
  if (t0) e_.trace(ShmEngine::kTrSendBuild, t0);
  bool mayHold = e_.wouldHoldPush(n, data_.mem().device) && paths->smReaches(t, used, place, data_.mem().device);
  bool resident = paths->residentOk(t, used, place, data_.mem().device, n);
  mem::DoneFlag flag;
  if (resident) e_.deliveredFlag(peer_, a.idx, n, &flag);
  base::Status st = issuePush(dst, t, used, GpuPaths::issueFor(place), n, mayHold, resident, &flag);
  if (!st.isOk()) {
    abort(st);
    return true;
  }
  e_.stream(this);
  return true;
}

// Whether the scheduler has this send copy straight into the advertised receive t (at place), and
// over which single-copy channel.
bool ShmSend::pushesInto(GpuPaths* paths, std::size_t n, const GpuOffer& t, GpuPaths::Place place,
                         sched::Channel* ch) const {
  // The pair's caps (a forced channel the pair can use, e.g. the staging ring, declines the claim:
  // the rendezvous then takes that channel), the receive's single-copy paths from its advert.
  sched::Query q{paths->peerClass(peer_.worldRank), mem::MemKind::kDevice, sched::Dst::kPosted, n,
                 sched::tracer().pattern(peer_.worldRank), paths->senderCaps(peer_.worldRank)};
  q.caps.ipc = (t.flags & GpuOffer::kIpc) != 0;
  q.caps.vmmZc = (t.flags & GpuOffer::kZc) != 0;
  q.sameGpu = place == GpuPaths::Place::kSameGpu;
  q.senderDrives = paths->drives(peer_.worldRank);
  *ch = sched::select(sched::table(), q);
  if (*ch != sched::Channel::kCudaIpc && *ch != sched::Channel::kCudaVmmZc) return false;
  // A message large enough for the host rail beside NVLink takes the rendezvous (the receiver
  // asks for the split with its CTS); an advert's delivery is one copy.
  sched::Query rail = q;
  rail.dst = sched::Dst::kGpu;
  GpuPaths::railCaps(place, &rail.caps);
  if (sched::hostRail(sched::table(), rail, [&] { return e_.receivingFrom(peer_); }) > 0) return false;
  // One GPU, the receiver drives: it pulls after the envelope (this process leaves the GPU alone).
  // (pullable takes the paths mutex and looks the buffer up: asked only of the driver's adverts)
  return !(sched::leaveToReceiver(sched::table(), q) &&
           paths->pullable(peer_.worldRank, data_.gpuData(), n, data_.mem()));
}

// A claimed advert in the statistics (CGDR_STATS): a rendezvous moved by one copy that the sender
// pushed, its channel, and how long the send waited for the advert where it did.
void ShmSend::countClaim(sched::Channel used, std::size_t n) {
  auto& s = e_.stats();
  if (advertWaitFrom_) {
    std::uint64_t waited = ShmEngine::traceNow() - advertWaitFrom_;
    ++s.advertWaitFound;
    if (!blocking_) ++s.advertWaitFoundNonBlocking;
    s.advertWaitNs += waited;
    s.advertWaitLongestNs = std::max(s.advertWaitLongestNs, waited);
  }
  ++s.rendezvous;
  ++s.singleCopy;
  ++s.pushed;
  e_.countChannel(used, n);
}

// A GPU send whose receiver has no advert posted holds its envelope back for up to
// CGDR_CUDA_ADVERT_WAIT, where that receiver's receives were lately advertised in time (a send to
// it claimed one): in a ping-pong the peer posts its next receive just after finishing its own
// send, and an envelope that comes first costs a match and a pull, or a CTS round trip above the
// pull limit. The message cannot be received before its receive is posted, so the wait only
// costs where a receive that is not advertised (e.g. MPI_ANY_SOURCE) is posted within it; a wait
// that runs out stops the waiting for this peer until a send claims an advert again.
// The wait's first call starts it; later ones say whether it still runs.
bool ShmSend::advertWaitRuns() {
  if (!peer_.advertsInTime || state_ != State::kQueued || advertWaitNs() == 0) return false;
  std::uint64_t now = ShmEngine::traceNow();
  auto& s = e_.stats();
  if (!advertWaitFrom_) {
    advertWaitFrom_ = now;
    ++s.advertWaits;
    if (!blocking_) ++s.advertWaitsNonBlocking;
    return true;
  }
  if (now - advertWaitFrom_ < advertWaitNs()) return true;
  peer_.advertsInTime = false;
  ++s.advertWaitRanOut;
  return false;
}

// A non-blocking send waits within its call: it cannot wait in progress, as the program may not
// call MPI again soon. In a window of non-blocking sends (OSU's bw: the receiver posts its
// receives just after sending the window's acknowledgement) the first send otherwise often comes
// before its advert, its envelope makes the receiver take back every advert of the window, and
// the whole window goes through envelopes and requests (a third fewer small messages a second).
// Engine mutex and the peer's sendLock held (the receiver is another process: it posts regardless).
bool ShmSend::spinForAdvert(std::uint64_t t0) {
  bool none = true;
  while (none && advertWaitRuns()) {
    none = false;
    if (tryClaim(t0, &none)) return true;  // (it counts the wait as found)
  }
  return false;  // none came in time, or one that this send may not take: its envelope goes now
}

// Host bytes (GPU data copied to host memory first, when it could not be streamed block by block).
bool ShmSend::pumpHost() {
  shm::Endpoint& ep = e_.endpoint();
  std::uint32_t chunkBytes = ep.geometry().chunkBytes;
  auto v = data_.hostView();
  if (!v.isOk()) {
    abort(v.status());
    return true;
  }
  const char* bytes = v.value();
  while (sent_ < toSend_) {
    int c = ep.takeChunk();
    if (c < 0) return false;
    std::uint64_t n = std::min<std::uint64_t>(chunkBytes, toSend_ - sent_);
    std::memcpy(ep.chunk(c), bytes + sent_, n);
    shm::CtlRecord r{};
    r.type = static_cast<std::uint32_t>(shm::CtlType::kData);
    r.chunk = static_cast<std::uint32_t>(c);
    r.msgId = msgId_;
    r.offset = sent_;
    r.len = n;
    e_.sendCtl(peer_, r);
    sent_ += n;
  }
  finish();
  return true;
}

// Device bytes, block by block with the copy engine: into the host chunks (cuda-staged) or the
// cuMem ring (cuda-vmm-stage); each block is announced once its copy finished, so the copy of
// the next block overlaps the receiver's copy of this one.
bool ShmSend::pumpAsync() {
  shm::Endpoint& ep = e_.endpoint();
  while (!inflight_.empty() && inflight_.front().copy.done()) {
    CopyBlock& b = inflight_.front();
    if (!b.copy.error().isOk()) {
      abort(b.copy.error());
      return true;
    }
    shm::CtlRecord r{};
    r.type = static_cast<std::uint32_t>(b.devSlot ? shm::CtlType::kDevData : shm::CtlType::kData);
    r.chunk = b.slot;
    r.msgId = msgId_;
    r.offset = b.offset;
    r.len = b.len;
    if (b.devSlot) {
      r.ring = ring_.id;
      r.slotOffset = std::uint64_t{b.slot} * ring_.slotBytes;
    }
    e_.sendCtl(peer_, r);
    inflight_.pop_front();
  }
  std::uint32_t chunkBytes = ep.geometry().chunkBytes;
  std::size_t block = devRing_ ? ring_.slotBytes : chunkBytes;
  std::uint32_t keepFree = 0;
  if (push_ && !devRing_) {  // the host rail: blocks of neighbouring chunks
    std::size_t span = std::max<std::size_t>(1, std::min<std::size_t>(gRailBlock.get().value / chunkBytes,
                                                                      ep.geometry().chunks / 2));
    block = span * chunkBytes;
    // A quarter of the chunks stay for other messages: with traffic both ways the receives of this
    // rank need one each to describe their buffers to the peer (else they are pulled, and one GPU
    // then drives both directions).
    keepFree = std::max<std::uint32_t>(1, ep.geometry().chunks / 4);
  }
  int device = data_.mem().device;
  while (sent_ < toSend_) {
    std::uint64_t len = std::min<std::uint64_t>(block, toSend_ - sent_);
    int slot = devRing_ ? ep.takeDevSlot() : ep.takeChunks(ep.chunksOf(len), keepFree);
    if (slot < 0) break;
    CopyBlock b;
    b.slot = static_cast<std::uint32_t>(slot);
    b.devSlot = devRing_;
    b.offset = sent_;
    b.len = len;
    char* dst = devRing_ ? ring_.base + std::size_t(slot) * ring_.slotBytes : ep.chunk(slot);
    if (!devRing_) e_.checkPinned(peer_);
    // this rank's ring lives until finalize: one identity for it
    mem::CopyIds ids{devRing_ ? mem::copyId(~std::uint64_t{0}, 1) : 0, data_.mem().bufferId};
    base::Status st = b.copy.start(dst, data_.gpuData() + sent_, b.len, device,
                                   devRing_ ? mem::CopyDir::kStage : mem::CopyDir::kToHost, mem::Issue::kGraph, ids);
    if (!st.isOk()) {
      abort(st);
      return true;
    }
    sent_ += b.len;
    inflight_.push_back(std::move(b));
  }
  if (sent_ == toSend_ && inflight_.empty() && !pushPending_) {
    finish();
    return true;
  }
  return false;
}

void ShmSend::onCts(std::uint64_t len, std::uint64_t mode, const GpuOffer* target, std::uint64_t tail) {
  if (state_ != State::kWaitCts) return;
  toSend_ = std::min<std::uint64_t>(len, data_.size());
  state_ = State::kStreaming;
  if (tail >= toSend_) tail = 0;
  if (target && startPush(*target, toSend_ - tail)) {
    if (tail) {  // the host rail: the last bytes through the host chunks, block by block, meanwhile
      sent_ = toSend_ - tail;
      async_ = true;  // (the chunks were page-locked when this GPU send was posted: tryPost)
    }
    pump();
    return;
  }
  bool device = data_.mem().kind == mem::MemKind::kDevice && data_.gpuData();
  GpuPaths* paths = e_.gpu();
  devRing_ = device && paths && mode == static_cast<std::uint64_t>(shm::StreamMode::kDevRing) &&
             paths->ring(peer_.worldRank, data_.mem().device, &ring_);
  async_ = device;  // (chunks page-locked at the post, as above)
  pump();
}

void ShmSend::abort(const base::Status& s) {
  if (advert_) e_.notify(peer_, shm::CtlType::kAdvertAbort, advert_);
  else e_.notify(peer_, shm::CtlType::kAbortSend, msgId_);
  fail(s);
}

void ShmSend::onFin() {
  if (state_ == State::kWaitCts) finish();
}

void ShmSend::onAck() {
  if (state_ == State::kWaitAck) finish();
}

void ShmSend::onCancelReply(bool withdrawn) {
  cancelPending_ = false;
  if (withdrawn && (state_ == State::kWaitAck || state_ == State::kWaitCts)) {
    PMPI_Status_set_cancelled(&status, 1);
    finish();
  }
}

void ShmSend::fail(const base::Status& s) {
  error = MPI_ERR_OTHER;
  failure = s;
  finish();
}

int ShmSend::cancel() {
  std::lock_guard lock(e_.mutex());
  if (state_ == State::kQueued) {
    PMPI_Status_set_cancelled(&status, 1);
    finish();  // untrack() also takes it out of the outbound queue
    return MPI_SUCCESS;
  }
  if ((state_ == State::kWaitAck || state_ == State::kWaitCts) && !cancelPending_) {
    e_.notify(peer_, shm::CtlType::kCancelReq, msgId_);
    cancelPending_ = true;
  }
  return MPI_SUCCESS;
}

bool ShmSend::poll() {
  std::lock_guard lock(e_.mutex());
  if (state_ != State::kDone) e_.progress();
  if (state_ != State::kDone && !e_.peerAlive(peer_))
    fail(base::Status(base::Errc::kPeerLost, "co-located rank " + std::to_string(peer_.worldRank) +
                                                 " died before the send to it completed"));
  return state_ == State::kDone;
}

}  // namespace cgdr::engine
