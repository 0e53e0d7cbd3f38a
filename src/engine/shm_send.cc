#include <cstring>

#include "base/errors.hpp"
#include "base/log.hpp"
#include "engine/shm_ops.hpp"

namespace cgdr::engine {
namespace shm = channel::shm;

ShmSend::ShmSend(ShmEngine& e, shm::Peer& p, const base::SendArgs& a, const CommInfo& c, SendData data)
    : e_(e), peer_(p), data_(std::move(data)), ctx_(c.ctx), src_(c.rank), tag_(a.tag), mode_(a.mode) {
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
  e_.untrack(this);
  if (counted_) {
    e_.addPending(-1);
    counted_ = false;
  }
}

bool ShmSend::tryPost() {
  std::lock_guard producer(peer_.sendLock);
  std::size_t n = data_.size();
  bool sync = mode_ == base::SendMode::kSync;
  bool eager = n <= shm::eagerLimit() && peer_.eagerSent + n - peer_.out.consumed() <= shm::eagerCredit();
  auto* h = peer_.out.reserve(static_cast<std::uint32_t>(sizeof(shm::MsgHeader) + (eager ? n : 0)));
  if (!h) return false;
  msgId_ = e_.newMsgId();
  h->type = static_cast<std::uint16_t>(eager ? shm::RecType::kEager : shm::RecType::kRts);
  h->flags = sync ? shm::kFlagSync : 0;
  h->ctx = ctx_;
  h->src = src_;
  h->tag = tag_;
  h->seq = peer_.seqOut++;
  h->size = n;
  h->msgId = msgId_;
  h->addr = eager ? 0 : reinterpret_cast<std::uint64_t>(data_.bytes());
  if (eager && n) std::memcpy(h + 1, data_.bytes(), n);
  peer_.out.commit();
  if (eager) {
    ++e_.stats().eager;
    peer_.eagerSent += n;
    if (!sync) {
      finish();
      return true;
    }
    state_ = State::kWaitAck;
  } else {
    ++e_.stats().rendezvous;
    state_ = State::kWaitCts;
  }
  e_.track(this);
  return true;
}

bool ShmSend::pump() {
  shm::Endpoint& ep = e_.endpoint();
  std::uint32_t chunkBytes = ep.geometry().chunkBytes;
  while (sent_ < toSend_) {
    int c = ep.takeChunk();
    if (c < 0) return false;
    std::uint64_t n = std::min<std::uint64_t>(chunkBytes, toSend_ - sent_);
    std::memcpy(ep.chunk(c), data_.bytes() + sent_, n);
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

void ShmSend::onCts(std::uint64_t len) {
  if (state_ != State::kWaitCts) return;
  toSend_ = std::min<std::uint64_t>(len, data_.size());
  state_ = State::kStreaming;
  pump();
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
    shm::CtlRecord r{};
    r.type = static_cast<std::uint32_t>(shm::CtlType::kCancelReq);
    r.msgId = msgId_;
    e_.sendCtl(peer_, r);
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
