#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/config.hpp"
#include "base/errors.hpp"
#include "base/log.hpp"
#include "channel/net/net_recv.hpp"
#include "engine/real_op.hpp"
#include "engine/shm_ops.hpp"
#include "mem/classify.hpp"
#include "sched/tracer.hpp"

namespace cgdr::engine {
namespace shm = channel::shm;

namespace {

base::ChoiceSetting gPush("CGDR_CUDA_PUSH", "posted", {"off", "fallback", "posted", "always"},
                          "Single copy by the sender into the receiver's GPU buffer (where the sender can map it: "
                          "an IPC handle, an exportable cuMem allocation). fallback: only where the receiver cannot "
                          "pull from the sender's buffer (e.g. cudaMalloc source, exportable destination across "
                          "containers); posted: also where the receive was posted before the send came (the "
                          "receiver advertises its buffer, and the sender copies without a round trip) and above "
                          "CGDR_CUDA_PULL_LIMIT; always: whenever possible; off: never.");
enum { kPushOff, kPushFallback, kPushPosted, kPushAlways };

// Reads n bytes of another process's memory (single copy); false if the kernel refuses.
bool readPeer(int pid, std::uint64_t addr, char* dst, std::size_t n) {
  while (n > 0) {
    iovec local{dst, n};
    iovec remote{reinterpret_cast<void*>(addr), n};
    ssize_t r = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (r <= 0) return false;
    dst += r;
    addr += static_cast<std::uint64_t>(r);
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace

ShmRecv::ShmRecv(ShmEngine& e, const base::RecvArgs& a, const CommInfo& c, RecvTarget t, bool mixed)
    : e_(e), args_(a), target_(std::move(t)), ctx_(c.ctx), src_(a.peer), tag_(a.tag), mixed_(mixed) {
  comm = c.comm;
  base::setEmptyStatus(&status);
  if (src_ >= 0 && src_ < c.size) source_ = c.peer[src_];
  e_.addPending(1);
}

ShmRecv::~ShmRecv() {
  std::lock_guard lock(e_.mutex());
  if (advert_) e_.withdrawAdvert(this, true);
  if (state_ == State::kPosted) e_.unpost(this);
  if (state_ == State::kReceiving && from_) e_.forgetData(*from_, msgId_);
  e_.unwatchCopies(this);
  if (mixed_) e_.dropFromOrder(this);
  if (state_ != State::kDone) e_.addPending(-1);
}

void ShmRecv::setEnvelope(int src, int tag) {
  status.MPI_SOURCE = src;
  status.MPI_TAG = tag;
}

void ShmRecv::complete(std::size_t received, std::size_t size) {
  if (railTail_ && railBoth_ && pushDone_) {  // the governor learns (a railed push: from_, both times set)
    auto pushNs = static_cast<std::int64_t>(railPushNs_ - railCtsNs_);
    std::int64_t late = railPushLast_ ? -1 : static_cast<std::int64_t>(ShmEngine::traceNow() - railPushNs_);
    from_->railFactor = sched::railFactorAfter(from_->railFactor, pushNs, late);
    if (sched::railTailLate(pushNs, late)) ++e_.stats().railLate;  // (at the governor's floor too)
    if (late < 0) ++e_.stats().railEarly;
  }
  got_ = received;
  size_ = size;
  state_ = State::kLanded;
}

void ShmRecv::finalize() {
  std::size_t received = got_, size = size_;
  base::Status st = target_.finish(received, dstOnHost_);
  PMPI_Status_set_elements_x(&status, MPI_BYTE, static_cast<MPI_Count>(received));
  if (!st.isOk()) {
    error = MPI_ERR_OTHER;
    failure = st;
  } else if (size > received) {
    error = MPI_ERR_TRUNCATE;
    failure = base::Status(base::Errc::kTruncate, "message of " + std::to_string(size) +
                                                      " bytes truncated to the receive buffer's " +
                                                      std::to_string(received));
  }
  status.MPI_ERROR = error;
  state_ = State::kDone;
  e_.addPending(-1);
  if (doneNs_) {
    e_.trace(ShmEngine::kTrRecvFinish, doneNs_);
    e_.lastRecvDone = ShmEngine::traceNow();
  }
}

void ShmRecv::deliverEager(shm::Peer& from, const Unexpected& env, const char* payload) {
  setEnvelope(env.src, env.tag);
  std::size_t n = std::min(env.size, target_.capacity());
  if (n) std::memcpy(target_.landing(), payload, n);
  from.in.addConsumed(env.size);
  if (env.sync) {
    e_.notify(from, shm::CtlType::kAck, env.msgId);
  }
  complete(n, env.size);
}

// Where the bytes go. With async GPU copies a contiguous GPU buffer is written directly;
// otherwise host bytes land in the user's contiguous host buffer or the landing area.
bool ShmRecv::chooseDestination(bool async) {
  device_ = target_.gpu() ? target_.device() : -1;
  dstAsync_ = async && target_.gpu() && target_.contiguous();
  if (dstAsync_) {
    dst_ = target_.direct();
    dstOnHost_ = false;
  } else {
    dst_ = target_.landing();
    dstOnHost_ = true;
  }
  return dst_ != nullptr || expect_ == 0;
}

void ShmRecv::sendCts(shm::Peer& from, shm::StreamMode mode, std::uint32_t chunk, std::uint64_t tail) {
  shm::CtlRecord r{};
  r.type = static_cast<std::uint32_t>(shm::CtlType::kCts);
  r.chunk = chunk;
  r.msgId = msgId_;
  r.len = expect_;
  r.offset = tail;
  r.mode = static_cast<std::uint64_t>(mode);
  r.sentNs = ShmEngine::tracing() ? ShmEngine::traceNow() : 0;
  e_.sendCtl(from, r);
  if (mode != shm::StreamMode::kPush) ++e_.stats().pipelined;
  state_ = State::kReceiving;
  if (expect_ == 0) {
    complete(0, size_);
    return;
  }
  e_.expectData(from, msgId_, this);
}

// One copy straight from the sender's buffer (cuda-ipc, cuda-vmm-zc); false if it cannot be reached.
bool ShmRecv::startPull(shm::Peer& from, const Unexpected& env, sched::Channel ch) {
  GpuPaths* paths = e_.gpu();
  if (!paths || expect_ == 0 || !chooseDestination(true)) return false;
  if (device_ < 0) device_ = paths->homeDevice();  // a host receive copies with this rank's GPU
  void* src = paths->peerAddress(from.worldRank, env.offer, ch, device_);
  if (!src) return false;
  CopyBlock b;
  b.len = expect_;
  std::uint64_t t = ShmEngine::tracing() ? ShmEngine::traceNow() : 0;
  mem::CopyIds ids{dstAsync_ ? target_.mem().bufferId : 0, GpuPaths::peerMemoryId(from.worldRank, env.offer, ch)};
  bool resident = dstAsync_ && paths->residentOk(env.offer, ch, place_, device_, expect_);
  held_ = dstAsync_ && e_.wouldHoldPull(expect_) && paths->smReaches(env.offer, ch, place_, device_) &&
          e_.holdPull(this, mem::GpuCopy::Many{dst_, src, expect_}, device_);
  if (held_) {  // started with the step's other pulls (releaseHeld)
    heldSrc_ = src;
    heldIds_ = ids;
    heldResident_ = resident;
  } else {
    base::Status st =
        b.copy.start(dst_, src, expect_, device_, dstAsync_ ? mem::CopyDir::kPeer : mem::CopyDir::kToHost, issue_, ids,
                     resident);
    if (t) {
      e_.trace(ShmEngine::kTrCopyIssue, t);
      b.issuedNs = ShmEngine::traceNow();
    }
    if (!st.isOk()) {
      CGDR_LOG(kWarn, kCuda, "%s copy from rank %d failed (%s): taking another channel", sched::channelName(ch),
               from.worldRank, st.message().c_str());
      return false;
    }
  }
  inflight_.push_back(std::move(b));
  pulling_ = true;
  state_ = State::kReceiving;
  e_.watchCopies(this);
  e_.countChannel(ch, size_);
  ++e_.stats().singleCopy;
  if (dstAsync_) ++e_.stats().pulled;
  return true;
}

// The sender copies straight into this rank's GPU buffer: the CTS names one of this rank's
// description slots holding the buffer's description (the sender gives it back once read); false
// if none is free. The sender may still stream the bytes (DATA) where it cannot map the buffer.
// tail: the last bytes go through host memory instead (sched::hostRail): the sender streams them
// through its host chunks (DATA) while it pushes the rest, and PUSHED names only the rest.
bool ShmRecv::startPush(shm::Peer& from, const GpuOffer& target, sched::Channel ch, std::uint64_t tail) {
  shm::Endpoint& ep = e_.endpoint();
  if (!chooseDestination(true) || !dstAsync_) return false;
  static_assert(sizeof target <= shm::kDescPayload);
  int c = ep.takeDesc();
  if (c < 0) return false;
  std::memcpy(ep.desc(c), &target, sizeof target);
  pushed_ = true;
  railTail_ = tail < expect_ ? tail : 0;
  if (railTail_) railCtsNs_ = ShmEngine::traceNow();
  e_.countChannel(ch, size_);
  ++e_.stats().singleCopy;
  ++e_.stats().pushed;
  sendCts(from, shm::StreamMode::kPush, static_cast<std::uint32_t>(c), railTail_);
  return true;
}

// The sender's copy into this rank's buffer finished: all of it, or all but the host rail's tail,
// whose blocks may still be arriving (or the sender streamed everything: no PUSHED comes then).
void ShmRecv::onPushed(shm::Peer& from, std::uint64_t len) {
  if (state_ != State::kReceiving || !pushed_ || pushDone_ || len != expect_ - railTail_ || got_ + len > expect_) {
    fail(base::Status(base::Errc::kProtocol, "unexpected push completion from rank " + std::to_string(from.worldRank)));
    return;
  }
  pushDone_ = true;
  got_ += len;
  if (railTail_) {  // the sender did split (a message served by two channels counts under both)
    railPushNs_ = ShmEngine::traceNow();
    railPushLast_ = got_ == expect_ && inflight_.empty();
    e_.countChannel(sched::Channel::kHostPipe, size_);
    ++e_.stats().railed;
    e_.stats().railBytes += railTail_;
    if (railBoth_) ++e_.stats().railedBoth;
  }
  if (got_ == expect_ && inflight_.empty()) {
    e_.forgetData(from, msgId_);
    complete(expect_, size_);
  }
}

bool ShmRecv::advertisable() const {
  return source_ && tag_ != MPI_ANY_TAG && !mixed_ && state_ == State::kPosted && target_.gpu() &&
         target_.mem().kind == mem::MemKind::kDevice && target_.direct() && target_.capacity() > 0 &&
         gPush.get().index >= kPushPosted;
}

bool ShmRecv::describeForAdvert(GpuOffer* o) {
  GpuPaths* paths = e_.gpu();
  if (!paths || paths->peerClass(source_->worldRank) == sched::PeerClass::kSelf) return false;
  o->kind = static_cast<std::int32_t>(mem::MemKind::kDevice);
  paths->describe(source_->worldRank, target_.direct(), target_.capacity(), target_.mem(), o);
  return (o->flags & (GpuOffer::kIpc | GpuOffer::kZc)) != 0;
}

void ShmRecv::claimedBy(shm::Peer& p) {
  state_ = State::kReceiving;
  from_ = &p;
  setEnvelope(src_, tag_);
}

// The sender copied `len` bytes into the advertised buffer.
void ShmRecv::onAdvertDone(shm::Peer& p, std::uint64_t len) {
  if (state_ != State::kReceiving || from_ != &p || len == 0 || len > target_.capacity() || !chooseDestination(true) ||
      !dstAsync_) {
    fail(base::Status(base::Errc::kProtocol, "unexpected delivery into an advertised buffer from rank " +
                                                 std::to_string(p.worldRank)));
    return;
  }
  if (ShmEngine::tracing()) doneNs_ = ShmEngine::traceNow();
  expect_ = len;
  complete(len, len);
}

void ShmRecv::startRendezvous(shm::Peer& from, const Unexpected& env) {
  std::uint64_t t0 = env.gpu && env.sentNs ? ShmEngine::traceNow() : 0;
  if (t0) e_.trace(ShmEngine::kTrEnvelope, env.sentNs);
  setEnvelope(env.src, env.tag);
  from_ = &from;
  msgId_ = env.msgId;
  size_ = env.size;
  expect_ = std::min(env.size, target_.capacity());
  // (From a GPU buffer into host memory this rank may copy with its GPU: not after a reset cgdr
  // did not see - e_.gpu() is nullptr once one was found. A GPU target was asked when classified.)
  if (env.gpu && !target_.gpu()) (void)mem::gpuStateLost();
  GpuPaths* paths = e_.gpu();
  sched::Query q{paths ? paths->peerClass(from.worldRank) : sched::PeerClass::kSameNamespace,
                 env.gpu ? static_cast<mem::MemKind>(env.offer.kind) : mem::MemKind::kHost,
                 target_.gpu() ? sched::Dst::kGpu : sched::Dst::kHost, expect_,
                 sched::tracer().pattern(from.worldRank), sched::Caps{}};
  if (env.gpu || target_.gpu()) e_.pinFor(from);  // (a wildcard receive: not pinned when posted)
  if (env.gpu) {
    startGpuRendezvous(from, env, q, paths, t0);
    return;
  }
  q.caps.cma = from.cma && env.addr;
  sched::Channel ch = sched::select(sched::table(), q);
  if (ch == sched::Channel::kCma && chooseDestination(false) && expect_ &&
      readPeer(from.pid, env.addr, dst_, expect_)) {
    e_.notify(from, shm::CtlType::kFin, msgId_, expect_);
    ++e_.stats().singleCopy;
    e_.countChannel(sched::Channel::kCma, size_);
    complete(expect_, size_);
    return;
  }
  if (!chooseDestination(true)) {
    abort(base::Status(base::Errc::kNoMemory, "no landing memory for a message"));
    return;
  }
  e_.countChannel(sched::Channel::kHostPipe, size_);
  sendCts(from, shm::StreamMode::kHostChunks);
}

void ShmRecv::startGpuRendezvous(shm::Peer& from, const Unexpected& env, sched::Query q, GpuPaths* paths,
                                 std::uint64_t t0) {
  GpuPaths::Place place = GpuPaths::Place::kUnknown;
  if (paths) {
    q.caps = paths->receiverCaps(from.worldRank, env.offer, target_.gpu() ? target_.device() : -1);
    place = paths->placeOf(env.offer, target_.gpu() ? target_.device() : -1);
    place_ = place;
    issue_ = GpuPaths::issueFor(place);
    if (target_.gpu()) GpuPaths::railCaps(place, &q.caps);
  }
  // Where the sender can map this rank's buffer it may push: the same single-copy channels.
  // posted: above the pull limit it pushes, so both directions of a pair agree on who copies
  // (on one GPU: where it drives the pair). fallback (and posted otherwise): only where this
  // rank cannot pull.
  if (paths && target_.gpu() && env.offer.kind == static_cast<std::int32_t>(mem::MemKind::kDevice)) {
    q.sameGpu = place == GpuPaths::Place::kSameGpu;
    q.senderDrives = !paths->drives(from.worldRank);
  }
  GpuOffer target;
  int push = gPush.get().index;
  bool canPull = q.caps.ipc || q.caps.vmmZc;
  bool askPush = push == kPushAlways || (push == kPushPosted && sched::senderCopies(sched::table(), q)) ||
                 ((push == kPushFallback || push == kPushPosted) && !canPull);
  if (paths && askPush && expect_ &&
      env.offer.kind == static_cast<std::int32_t>(mem::MemKind::kDevice) && target_.gpu() && target_.contiguous() &&
      target_.direct()) {
    paths->describe(from.worldRank, target_.direct(), expect_, target_.mem(), &target);
    q.caps.ipc = q.caps.ipc || (target.flags & GpuOffer::kIpc);
    q.caps.vmmZc = q.caps.vmmZc || (target.flags & GpuOffer::kZc);
  }
  sched::Channel ch = expect_ ? sched::select(sched::table(), q) : sched::Channel::kHostPipe;
  if (t0) e_.trace(ShmEngine::kTrRecvChoose, t0);
  if (ch == sched::Channel::kCudaIpc || ch == sched::Channel::kCudaVmmZc) {
    if (target.flags & (GpuOffer::kIpc | GpuOffer::kZc)) {  // the chosen channel's handle, else the other
      std::uint32_t want = ch == sched::Channel::kCudaIpc ? GpuOffer::kIpc : GpuOffer::kZc;
      if (!(target.flags & want)) want = target.flags & GpuOffer::kIpc ? GpuOffer::kIpc : GpuOffer::kZc;
      target.flags = want | (target.flags & GpuOffer::kMps);
      railBoth_ = false;  // asked only where the rail is taken one way or the other
      std::size_t tail = sched::hostRail(sched::table(), q, [&] { return railBoth_ = e_.sendingTo(from); });
      if (railBoth_) tail = sched::governedTail(tail, from.railFactor);
      if (startPush(from, target, want == GpuOffer::kIpc ? sched::Channel::kCudaIpc : sched::Channel::kCudaVmmZc,
                    tail))
        return;
    }
    if (startPull(from, env, ch)) return;
  }
  bool ring = ch == sched::Channel::kCudaVmmStage ||
              ((ch == sched::Channel::kCudaIpc || ch == sched::Channel::kCudaVmmZc) && q.caps.vmmStage);
  if (!chooseDestination(true)) {
    abort(base::Status(base::Errc::kNoMemory, "no landing memory for a GPU message"));
    return;
  }
  e_.countChannel(ring ? sched::Channel::kCudaVmmStage : sched::Channel::kHostPipe, size_);
  sendCts(from, ring ? shm::StreamMode::kDevRing : shm::StreamMode::kHostChunks);
}

void ShmRecv::onData(shm::Peer& from, std::uint32_t chunk, std::uint64_t offset, std::uint64_t len) {
  shm::Endpoint& ep = e_.endpoint();
  // (a block may span neighbouring chunks: the host rail's)
  if (state_ != State::kReceiving || pulling_ || chunk >= ep.geometry().chunks || len == 0 ||
      len > std::uint64_t{ep.geometry().chunks - chunk} * ep.geometry().chunkBytes || offset + len > expect_ ||
      offset + len < offset) {
    fail(base::Status(base::Errc::kProtocol, "malformed data record from rank " + std::to_string(from.worldRank)));
    return;
  }
  const char* src = ep.peerChunk(from, chunk);
  if (dstAsync_) {  // host chunk -> GPU buffer with the copy engine; the chunk is released when it is done
    e_.checkPinned(from);  // page-locked by startRendezvous, the one sender of the CTS that leads here
    CopyBlock b;
    b.slot = chunk;
    b.offset = offset;
    b.len = len;
    base::Status st = b.copy.start(dst_ + offset, src, len, device_, mem::CopyDir::kToDevice);
    if (!st.isOk()) {
      abort(st);
      return;
    }
    inflight_.push_back(std::move(b));
    e_.watchCopies(this);
    return;
  }
  std::memcpy(dst_ + offset, src, len);
  ep.releasePeerChunks(from, chunk, ep.chunksOf(len));
  got_ += len;
  if (got_ == expect_ && inflight_.empty()) {
    e_.forgetData(from, msgId_);
    complete(got_, size_);
  }
}

void ShmRecv::onDevData(shm::Peer& from, const shm::CtlRecord& r) {
  shm::Endpoint& ep = e_.endpoint();
  GpuPaths* paths = e_.gpu();
  if (state_ != State::kReceiving || pulling_ || r.chunk >= ep.geometry().devSlots || r.offset + r.len > expect_ ||
      r.offset + r.len < r.offset || r.slotOffset + r.len < r.slotOffset || !paths) {
    fail(base::Status(base::Errc::kProtocol, "malformed device data record from rank " + std::to_string(from.worldRank)));
    return;
  }
  if (device_ < 0) device_ = paths->homeDevice();
  char* ring = static_cast<char*>(paths->peerRing(from.worldRank, r.ring, r.slotOffset + r.len, device_));
  if (!ring) {
    abort(base::Status(base::Errc::kCuda, "cannot map the cuMem staging ring of rank " + std::to_string(from.worldRank)));
    return;
  }
  CopyBlock b;
  b.slot = r.chunk;
  b.devSlot = true;
  b.offset = r.offset;
  b.len = r.len;
  mem::CopyIds ids{dstAsync_ ? target_.mem().bufferId : 0,
                   GpuPaths::peerMemoryId(from.worldRank, sched::Channel::kCudaVmmStage, r.ring)};
  base::Status st = b.copy.start(dst_ + r.offset, ring + r.slotOffset, r.len, device_,
                                 dstAsync_ ? mem::CopyDir::kPeer : mem::CopyDir::kToHost, issue_, ids);
  if (!st.isOk()) {
    abort(st);
    return;
  }
  inflight_.push_back(std::move(b));
  e_.watchCopies(this);
}

void ShmRecv::releaseHeld(bool started) {
  if (!held_) return;
  held_ = false;
  CopyBlock& b = inflight_.front();
  if (ShmEngine::tracing()) b.issuedNs = ShmEngine::traceNow();
  if (started) return;
  base::Status st =
      b.copy.start(dst_, heldSrc_, expect_, device_, mem::CopyDir::kPeer, issue_, heldIds_, heldResident_);
  if (!st.isOk()) {
    inflight_.clear();
    abort(st);
  }
}

bool ShmRecv::pollCopies(mem::PollPass* pass) {
  if (held_) return false;  // not started yet (the step that held it starts it)
  shm::Endpoint& ep = e_.endpoint();
  while (!inflight_.empty() && inflight_.front().copy.done(pass)) {
    CopyBlock& b = inflight_.front();
    if (!b.copy.error().isOk()) {
      base::Status st = b.copy.error();
      inflight_.clear();
      abort(st);
      return true;
    }
    if (!pulling_ && from_) {
      if (b.devSlot) ep.releasePeerDevSlot(*from_, b.slot);
      else ep.releasePeerChunks(*from_, b.slot, ep.chunksOf(b.len));
    }
    if (pulling_ && b.issuedNs) {
      e_.trace(ShmEngine::kTrCopyRun, b.issuedNs);
      doneNs_ = ShmEngine::traceNow();
    }
    got_ += b.len;
    inflight_.pop_front();
  }
  if (!inflight_.empty()) return false;
  if (state_ != State::kReceiving) return true;
  if (pulling_) {
    e_.notify(*from_, shm::CtlType::kFin, msgId_, expect_);
    complete(expect_, size_);
  } else if (got_ == expect_) {
    e_.forgetData(*from_, msgId_);
    complete(got_, size_);
  }
  return true;
}

void ShmRecv::abort(const base::Status& s) {
  if (from_) e_.notify(*from_, shm::CtlType::kAbortRecv, msgId_);
  if (state_ == State::kPosted) state_ = State::kReceiving;  // matched already
  fail(s);
}

void ShmRecv::fail(const base::Status& s) {
  if (state_ == State::kDone) return;
  if (held_) {  // failed before its window started: the copy never runs
    e_.dropHeld(this);
    held_ = false;
  }
  if (advert_) e_.withdrawAdvert(this, true);  // claimed meanwhile: its delivery is ignored
  e_.unwatchCopies(this);
  if (state_ == State::kPosted) e_.unpost(this);
  if (state_ == State::kReceiving && from_) e_.forgetData(*from_, msgId_);
  error = MPI_ERR_OTHER;
  failure = s;
  state_ = State::kDone;
  e_.addPending(-1);
}

bool ShmRecv::probeReal() {
  if (state_ != State::kPosted) return state_ != State::kPosted;
  int flag = 0;
  MPI_Message m = MPI_MESSAGE_NULL;
  MPI_Status st;
  if (PMPI_Improbe(MPI_ANY_SOURCE, tag_, comm, &flag, &m, &st) != MPI_SUCCESS || !flag) return false;
  e_.unpost(this);
  state_ = State::kReal;
  // Receive it as the real MPI would: into the user's buffer, or staged when it is GPU memory.
  base::Span span = base::spanOf(args_.count, args_.type);
  mem::MemInfo mi;
  if (span.bytes) {
    auto c = mem::classify(base::spanStart(args_.buf, span), span.bytes);
    if (c.isOk()) mi = c.value();
  }
  if (mi.onGpu()) {
    auto op = channel::net::NetRecv::create(args_, mi, span, &m);
    if (op.isOk()) real_ = std::move(op.value());
    else fail(op.status());
    return true;
  }
  MPI_Request r = MPI_REQUEST_NULL;
  int rc = PMPI_Imrecv(args_.buf, args_.count, args_.type, &m, &r);
  auto op = std::make_unique<RealOp>(rc == MPI_SUCCESS ? r : MPI_REQUEST_NULL, comm);
  if (rc != MPI_SUCCESS) {
    op->error = rc;
    op->errorRaised = true;
  }
  real_ = std::move(op);
  return true;
}

int ShmRecv::cancel() {
  std::lock_guard lock(e_.mutex());
  if (state_ != State::kPosted) return MPI_SUCCESS;
  if (advert_ && !e_.withdrawAdvert(this, false)) return MPI_SUCCESS;  // its sender claimed it: it completes
  e_.unpost(this);
  PMPI_Status_set_cancelled(&status, 1);
  state_ = State::kDone;
  e_.addPending(-1);
  return MPI_SUCCESS;
}

bool ShmRecv::poll() {
  std::lock_guard lock(e_.mutex());
  if (state_ == State::kPosted || state_ == State::kReceiving) e_.progress();
  if (state_ == State::kLanded) finalize();
  if (state_ == State::kReal && real_->poll()) {
    status = real_->status;
    error = real_->error;
    errorRaised = real_->errorRaised;
    failure = real_->failure;
    state_ = State::kDone;
    e_.addPending(-1);
  }
  shm::Peer* waitingOn = state_ == State::kReceiving ? from_ : state_ == State::kPosted ? source_ : nullptr;
  if (waitingOn && !e_.peerAlive(*waitingOn))
    fail(base::Status(base::Errc::kPeerLost, "co-located rank " + std::to_string(waitingOn->worldRank) +
                                                 " died before its message to this rank arrived"));
  return state_ == State::kDone;
}

}  // namespace cgdr::engine
