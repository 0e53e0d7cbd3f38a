#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/errors.hpp"
#include "base/log.hpp"
#include "channel/net/net_recv.hpp"
#include "engine/real_op.hpp"
#include "engine/shm_ops.hpp"
#include "mem/classify.hpp"

namespace cgdr::engine {
namespace shm = channel::shm;

namespace {

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
  if (state_ == State::kPosted) e_.unpost(this);
  if (state_ == State::kReceiving && from_) e_.forgetData(*from_, msgId_);
  if (mixed_) e_.dropFromOrder(this);
  if (state_ != State::kDone) e_.addPending(-1);
}

void ShmRecv::setEnvelope(int src, int tag) {
  status.MPI_SOURCE = src;
  status.MPI_TAG = tag;
}

void ShmRecv::complete(std::size_t received, std::size_t size) {
  got_ = received;
  size_ = size;
  state_ = State::kLanded;
}

void ShmRecv::finalize() {
  std::size_t received = got_, size = size_;
  base::Status st = target_.finish(received);
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
}

void ShmRecv::deliverEager(shm::Peer& from, const Unexpected& env, const char* payload) {
  setEnvelope(env.src, env.tag);
  std::size_t n = std::min(env.size, target_.capacity());
  if (n) std::memcpy(target_.landing(), payload, n);
  from.in.addConsumed(env.size);
  if (env.sync) {
    shm::CtlRecord r{};
    r.type = static_cast<std::uint32_t>(shm::CtlType::kAck);
    r.msgId = env.msgId;
    e_.sendCtl(from, r);
  }
  complete(n, env.size);
}

void ShmRecv::startRendezvous(shm::Peer& from, const Unexpected& env) {
  setEnvelope(env.src, env.tag);
  from_ = &from;
  msgId_ = env.msgId;
  size_ = env.size;
  expect_ = std::min(env.size, target_.capacity());
  shm::CtlRecord r{};
  r.msgId = env.msgId;
  r.len = expect_;
  if (from.cma && env.addr && readPeer(from.pid, env.addr, target_.landing(), expect_)) {
    r.type = static_cast<std::uint32_t>(shm::CtlType::kFin);
    e_.sendCtl(from, r);
    ++e_.stats().singleCopy;
    complete(expect_, size_);
    return;
  }
  r.type = static_cast<std::uint32_t>(shm::CtlType::kCts);
  e_.sendCtl(from, r);
  ++e_.stats().pipelined;
  state_ = State::kReceiving;
  if (expect_ == 0) {
    complete(0, size_);
    return;
  }
  e_.expectData(from, msgId_, this);
}

void ShmRecv::onData(shm::Peer& from, std::uint32_t chunk, std::uint64_t offset, std::uint64_t len) {
  shm::Endpoint& ep = e_.endpoint();
  if (state_ != State::kReceiving || chunk >= ep.geometry().chunks || len > ep.geometry().chunkBytes ||
      offset + len > expect_ || offset + len < offset) {
    fail(base::Status(base::Errc::kProtocol, "malformed data record from rank " + std::to_string(from.worldRank)));
    return;
  }
  std::memcpy(target_.landing() + offset, ep.peerChunk(from, chunk), len);
  ep.releasePeerChunk(from, chunk);
  got_ += len;
  if (got_ == expect_) {
    e_.forgetData(from, msgId_);
    complete(got_, size_);
  }
}

void ShmRecv::fail(const base::Status& s) {
  if (state_ == State::kDone) return;
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
