// What arrives on this rank's rings from each co-located sender: message records (envelopes,
// eager data), matched against posted receives or queued as unexpected, and control records
// (the rendezvous protocol of shm_ops.hpp), dispatched to the receive or send they name.
#include <algorithm>
#include <cstring>
#include <string>

#include "base/errors.hpp"
#include "base/log.hpp"
#include "engine/comm_table.hpp"
#include "engine/shm_engine.hpp"
#include "engine/shm_ops.hpp"

namespace cgdr::engine {
namespace shm = channel::shm;

void ShmEngine::breakPeer(shm::Peer& p, const char* why) {
  if (p.dead) return;
  CGDR_LOG(kError, kShm, "rank %d: %s; its traffic is dropped", p.worldRank, why);
  p.dead = true;
}

bool ShmEngine::handleRecord(shm::Peer& p, const shm::MsgHeader& h) {
  bool eager = h.type == static_cast<std::uint16_t>(shm::RecType::kEager);
  bool rts = h.type == static_cast<std::uint16_t>(shm::RecType::kRts);
  bool gpu = rts && (h.flags & shm::kFlagGpu);
  if ((!eager && !rts) || h.ctx < 0 || h.tag < 0 || h.seq != p.seqIn ||
      (eager && h.len < sizeof(shm::MsgHeader) + h.size) || (gpu && h.len < sizeof(shm::MsgHeader) + sizeof(GpuOffer))) {
    breakPeer(p, "malformed or out-of-order message record");
    return false;
  }
  ++p.seqIn;
  if (!adverts_[p.local].empty()) resolveAdverts(p);  // none of them can be claimed after this record
  const CommInfo* c = comms::byContext(h.ctx);  // cached per thread
  if (c && (h.src < 0 || h.src >= c->size || c->world[h.src] != p.worldRank)) {
    breakPeer(p, "message names a source that does not match its ring");
    return false;
  }
  Unexpected env;
  env.from = &p;
  env.ctx = h.ctx;
  env.src = h.src;
  env.tag = h.tag;
  env.size = h.size;
  env.msgId = h.msgId;
  env.addr = h.addr;
  env.rts = rts;
  env.sync = (h.flags & shm::kFlagSync) != 0;
  const char* payload = reinterpret_cast<const char*>(&h + 1);
  env.gpu = gpu;
  if (gpu) std::memcpy(&env.offer, payload, sizeof env.offer);
  env.sentNs = h.sentNs;
  CtxQueues& q = queuesOf(h.ctx);
  if (ShmRecv* r = c ? matchPosted(q, h.src, h.tag) : nullptr) {
    if (rts) r->startRendezvous(p, env);
    else r->deliverEager(p, env, payload);
    return true;
  }
  auto u = std::make_unique<Unexpected>(env);
  if (eager && h.size) {
    u->data.assign(payload, payload + h.size);
    stats_.unexpectedBytes += h.size;
    stats_.peakUnexpectedBytes = std::max(stats_.peakUnexpectedBytes, stats_.unexpectedBytes);
  }
  q.unexpected.push_back(std::move(u));
  return true;
}

bool ShmEngine::drainMessages(shm::Peer& p) {
  bool any = false;
  while (const shm::MsgHeader* h = p.in.peek()) {
    if (!handleRecord(p, *h)) return true;
    p.in.pop();
    any = true;
  }
  if (p.in.broken()) breakPeer(p, "corrupt message ring");
  return any;
}

void ShmEngine::answerCancel(shm::Peer& p, std::uint64_t msgId) {
  drainMessages(p);  // the message was written before the request: take it in first
  shm::CtlRecord r{};
  r.msgId = msgId;
  r.type = static_cast<std::uint32_t>(shm::CtlType::kCancelFail);
  for (auto& [ctx, q] : queues_) {
    for (auto it = q.unexpected.begin(); it != q.unexpected.end(); ++it) {
      if ((*it)->from != &p || (*it)->msgId != msgId) continue;
      if ((*it)->probed) {
        sendCtl(p, r);
        return;
      }
      if (!(*it)->rts) p.in.addConsumed((*it)->size);  // its eager bytes no longer count
      stats_.unexpectedBytes -= (*it)->data.size();
      q.unexpected.erase(it);
      r.type = static_cast<std::uint32_t>(shm::CtlType::kCancelOk);
      sendCtl(p, r);
      return;
    }
  }
  sendCtl(p, r);  // matched, probed or already received: the send proceeds
}

bool ShmEngine::drainControl(shm::Peer& p) {
  bool any = false;
  while (const shm::CtlRecord* r = p.ctlIn.peek()) {
    shm::CtlRecord c = *r;
    p.ctlIn.pop();
    any = true;
    if (!onControl(p, c)) return true;
  }
  if (p.ctlIn.broken()) breakPeer(p, "corrupt control ring");
  return any;
}

// One control record from the peer; false where the peer is dead after it (this record broke it).
bool ShmEngine::onControl(shm::Peer& p, const shm::CtlRecord& c) {
  auto type = static_cast<shm::CtlType>(c.type);
  if (type == shm::CtlType::kCancelReq) {
    answerCancel(p, c.msgId);
    return true;
  }
  if (type == shm::CtlType::kAdvertDone || type == shm::CtlType::kAdvertAbort) {
    advertEnded(p, c);
    return !p.dead;
  }
  if (type == shm::CtlType::kData || type == shm::CtlType::kDevData || type == shm::CtlType::kPushed ||
      type == shm::CtlType::kAbortSend)
    return onRecvControl(p, c, type);
  return onSendControl(p, c, type);
}

// A record about a message this rank receives (the sender streams, pushed, or gave up).
bool ShmEngine::onRecvControl(shm::Peer& p, const shm::CtlRecord& c, shm::CtlType type) {
  auto it = dataRecvs_.find(dataKey(p, c.msgId));
  if (it == dataRecvs_.end()) {
    if (type == shm::CtlType::kAbortSend) return true;  // the receive failed on its own meanwhile
    breakPeer(p, "data record for an unknown message");
    return false;
  }
  ShmRecv* rv = it->second;
  if (type == shm::CtlType::kData) rv->onData(p, c.chunk, c.offset, c.len);
  else if (type == shm::CtlType::kDevData) rv->onDevData(p, c);
  else if (type == shm::CtlType::kPushed) {
    traceDoneSeen(p, c.sentNs);
    rv->onPushed(p, c.len);
  } else {
    rv->fail(base::Status(base::Errc::kCuda, "co-located rank " + std::to_string(p.worldRank) +
                                                 " could not copy the message's GPU data"));
  }
  return true;
}

// A record about a message this rank sends. A push CTS names the receiver's description slot
// describing its buffer: read and given back whatever becomes of the send.
bool ShmEngine::onSendControl(shm::Peer& p, const shm::CtlRecord& c, shm::CtlType type) {
  GpuOffer target;
  bool push = type == shm::CtlType::kCts && c.mode == static_cast<std::uint64_t>(shm::StreamMode::kPush);
  if (push) {
    if (c.chunk >= ep_->geometry().descSlots) {
      breakPeer(p, "push request naming no description slot");
      return false;
    }
    std::memcpy(&target, ep_->peerDesc(p, c.chunk), sizeof target);
    ep_->releasePeerDesc(p, c.chunk);
  }
  auto it = sends_.find(c.msgId);
  if (it == sends_.end() || &it->second->peer() != &p) {
    if (type == shm::CtlType::kCancelFail) return true;  // the send completed meanwhile
    breakPeer(p, "control record for an unknown send");
    return false;
  }
  ShmSend* s = it->second;
  switch (type) {
    case shm::CtlType::kCts:
      if (c.sentNs && tracing()) trace(kTrCts, c.sentNs);
      s->onCts(c.len, c.mode, push ? &target : nullptr, push ? c.offset : 0);
      if (!s->finished()) streaming_.push_back(s);
      break;
    case shm::CtlType::kAbortRecv:
      s->fail(base::Status(base::Errc::kCuda, "co-located rank " + std::to_string(p.worldRank) +
                                                  " could not copy the message's GPU data"));
      break;
    case shm::CtlType::kFin: s->onFin(); break;
    case shm::CtlType::kAck: s->onAck(); break;
    case shm::CtlType::kCancelOk: s->onCancelReply(true); break;
    case shm::CtlType::kCancelFail: s->onCancelReply(false); break;
    default: breakPeer(p, "unknown control record"); return false;
  }
  return true;
}

void ShmEngine::flushCtl() {
  for (auto& peer : ep_->peers()) {
    auto& backlog = ctlBacklog_[peer->local];
    while (!backlog.empty() && peer->ctlOut.push(backlog.front())) backlog.pop_front();
  }
}

}  // namespace cgdr::engine
