#include "engine/shm_engine.hpp"

#include <algorithm>
#include <chrono>
#include <sched.h>
#include <cstring>
#include <ctime>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/dtype.hpp"
#include "base/errors.hpp"
#include "mem/classify.hpp"
#include "mem/resident.hpp"
#include "mem/vmm_heap.hpp"
#include "base/log.hpp"
#include "engine/msg_data.hpp"
#include "engine/held.hpp"
#include "engine/shm_ops.hpp"
#include "sched/tracer.hpp"
#include "topo/detect.hpp"

namespace cgdr::engine {
namespace shm = channel::shm;

ShmEngine* ShmEngine::instance_ = nullptr;

namespace {
base::Setting<bool> gStats("CGDR_STATS", "0", "", "Print the engine's counters (messages per protocol, peak "
                                                   "unexpected bytes) at MPI_Finalize.");
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
}  // namespace

base::Status ShmEngine::start(MPI_Comm world) {
  const topo::LocalityTable& t = topo::locality();
  std::vector<int> local;
  for (const auto& p : t.peers)
    if (p.engine.yes) local.push_back(p.rank);
  int anyLocal = local.size() > 1 ? 1 : 0, some = 0;
  PMPI_Allreduce(&anyLocal, &some, 1, MPI_INT, MPI_MAX, world);
  if (!some) return base::Status::ok();  // nobody shares memory with anybody: no engine
  if (local.size() <= 1) local.clear();  // alone on its host: no peers, but the wire-up is collective
  shm::Config cfg = shm::configFromSettings();
  cfg.features |= advertFeatures();
  auto ep = shm::Endpoint::open(world, t.me.nonce, local, cfg);
  if (!ep.isOk()) return ep.status();
  auto gpu = GpuPaths::open(world, t.me.nonce, local, cfg.devSlots);  // collective too
  if (local.empty()) return base::Status::ok();
  int worldSize = 1;
  PMPI_Comm_size(world, &worldSize);
  sched::tracer().resize(worldSize);
  auto* e = new ShmEngine;
  e->ep_ = std::move(ep.value());
  e->gpu_ = std::move(gpu);
  e->eagerLimit_ = shm::eagerLimit();
  e->eagerCredit_ = shm::eagerCredit();
  e->outbound_.resize(local.size());
  e->adverts_.resize(local.size());
  e->pinned_.assign(local.size(), 0);
  e->segMapped_.assign(local.size(), nullptr);
  e->pollDelivered_ = (cfg.features & shm::kFeatureDeliveredWords) != 0;
  e->ctlBacklog_.resize(local.size());
  instance_ = e;
  return base::Status::ok();
}

void ShmEngine::stop() {
  ShmEngine* e = instance_;
  if (!e) return;
  if (gStats.get()) e->printStats();
  {
    std::lock_guard lock(e->mutex_);
    // Let buffered sends finish before the segments go away.
    for (int spins = 0; !e->adopted_.empty() && spins < 1000000; ++spins) e->progress();
  }
  instance_ = nullptr;
  delete e;
}

void ShmEngine::track(ShmSend* s) { sends_[s->msgId()] = s; }

void ShmEngine::untrack(ShmSend* s) {
  if (s->msgId()) sends_.erase(s->msgId());
  auto& q = outbound_[s->peer().local];
  for (auto it = q.begin(); it != q.end(); ++it)
    if (*it == s) {
      q.erase(it);
      break;
    }
  streaming_.remove(s);
}

void ShmEngine::queueSend(ShmSend* s) { outbound_[s->peer().local].push_back(s); }

ShmEngine::CtxQueues& ShmEngine::queuesOf(int ctx) {
  if (ctx != lastCtx_) {
    lastQueues_ = &queues_[ctx];  // unordered_map nodes never move
    lastCtx_ = ctx;
  }
  return *lastQueues_;
}

void ShmEngine::post(ShmRecv* r) { queuesOf(r->ctx()).posted.push_back(r); }

void ShmEngine::unpost(ShmRecv* r) { queuesOf(r->ctx()).posted.remove(r); }

bool ShmEngine::sendingTo(const shm::Peer& p) const {
  if (!outbound_[p.local].empty()) return true;
  for (const auto& [id, s] : sends_)
    if (&s->peer() == &p) return true;
  for (const ShmSend* s : streaming_)
    if (&s->peer() == &p) return true;
  return false;
}

bool ShmEngine::receivingFrom(const shm::Peer& p) const {
  if (!adverts_[p.local].empty()) return true;
  for (const auto& [key, r] : dataRecvs_)
    if ((key >> 48) == p.local) return true;
  return false;
}

// Whole segments: the chunks (this rank's D2H copies land in its own, its H2D copies read p's),
// and p's advert slots, whose `delivered` words this rank's resident copy kernel may set.
void ShmEngine::pinChunks(const shm::Peer& p) {
  gpu_->pin(ep_->segment(), ep_->segmentBytes());
  segMapped_[p.local] = static_cast<char*>(gpu_->pin(p.segment, ep_->segmentBytes()));
  pinned_[p.local] = 1;
}

void ShmEngine::expectData(shm::Peer& p, std::uint64_t msgId, ShmRecv* r) { dataRecvs_[dataKey(p, msgId)] = r; }

void ShmEngine::forgetData(shm::Peer& p, std::uint64_t msgId) { dataRecvs_.erase(dataKey(p, msgId)); }

void ShmEngine::watchCopies(ShmRecv* r) {
  if (std::find(copying_.begin(), copying_.end(), r) == copying_.end()) copying_.push_back(r);
}

void ShmEngine::unwatchCopies(ShmRecv* r) {
  auto it = std::find(copying_.begin(), copying_.end(), r);
  if (it != copying_.end()) copying_.erase(it);
}

void ShmEngine::countChannel(sched::Channel c, std::size_t bytes) {
  ++stats_.channel[static_cast<int>(c)];
  int bits = 0;
  while (bits < 64 && (bytes >> bits)) ++bits;
  stats_.bySize[bits] |= 1u << static_cast<int>(c);
}

bool ShmEngine::sendCtl(shm::Peer& p, const shm::CtlRecord& r) {
  auto& backlog = ctlBacklog_[p.local];
  if (backlog.empty() && p.ctlOut.push(r)) return true;
  backlog.push_back(r);
  return false;
}

bool ShmEngine::notify(shm::Peer& p, shm::CtlType type, std::uint64_t msgId, std::uint64_t len) {
  shm::CtlRecord r{};
  r.type = static_cast<std::uint32_t>(type);
  r.msgId = msgId;
  r.len = len;
  r.sentNs = tracing() ? traceNow() : 0;
  if (r.sentNs && (type == shm::CtlType::kPushed || type == shm::CtlType::kAdvertDone)) p.doneSentNs = r.sentNs;
  return sendCtl(p, r);
}

void ShmEngine::adopt(std::unique_ptr<base::Op> op) { adopted_.push_back(std::move(op)); }

namespace {
base::Setting<bool> gTrace("CGDR_TRACE_GPU", "0", "",
                           "Measure where GPU rendezvous messages spend their time; with CGDR_STATS=1 the median "
                           "and mean of each step are printed at the end (a tuning tool: with several threads "
                           "calling MPI their steps are pooled).");
}  // namespace

bool ShmEngine::tracing() {
  static const bool on = gTrace.get();
  return on;
}

std::uint64_t ShmEngine::traceNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::uint64_t(ts.tv_sec) * 1000000000ull + std::uint64_t(ts.tv_nsec);
}

bool ShmEngine::peerAlive(shm::Peer& p) {
  static thread_local double lastCheck = 0;
  if (p.dead) return false;
  double t = now();
  if (t - lastCheck < 0.05) return true;  // a syscall at most every 50 ms per waiting thread
  lastCheck = t;
  return ep_->alive(p);
}

ShmRecv* ShmEngine::matchPosted(CtxQueues& q, int src, int tag) {
  for (auto it = q.posted.begin(); it != q.posted.end(); ++it) {
    if ((*it)->matches(src, tag)) {
      ShmRecv* r = *it;
      q.posted.erase(it);
      return r;
    }
  }
  return nullptr;
}

base::Result<std::unique_ptr<base::Op>> ShmEngine::isend(const base::SendArgs& a, const CommInfo& c, shm::Peer* p,
                                                         const std::optional<mem::MemInfo>& seen) {
  auto data = SendData::prepare(a.buf, a.count, a.type, seen);
  if (!data.isOk()) return data.status();
  if (a.mode == base::SendMode::kBuffered) {
    base::Status st = data.value().detach();
    if (!st.isOk()) return st;
  }
  std::lock_guard lock(mutex_);
  auto op = std::make_unique<ShmSend>(*this, *p, a, c, std::move(data.value()));
  if (outbound_[p->local].empty() && op->tryPost()) return std::unique_ptr<base::Op>(std::move(op));
  if (!op->finished()) queueSend(op.get());
  return std::unique_ptr<base::Op>(std::move(op));
}

bool ShmEngine::trySendNow(const base::SendArgs& a, const CommInfo& c, shm::Peer* p, int* rc,
                           std::optional<mem::MemInfo>* seen) {
  // Only small contiguous host messages with nothing queued ahead: no operation, no copy but one.
  if (a.mode == base::SendMode::kSync || !outbound_[p->local].empty()) return false;
  base::Span s = base::spanOf(a.count, a.type);
  std::size_t n = s.dataBytes;
  if (n > eagerLimit_ || !s.contiguous) return false;
  const void* src = base::spanStart(a.buf, s);
  if (n && base::cuda::usable()) {
    auto m = mem::classify(src, n);
    if (m.isOk() && seen && s.bytes == n) *seen = m.value();
    if (!m.isOk() || m.value().onGpu()) return false;  // the operation path reports or stages
  }
  std::lock_guard lock(mutex_);
  std::lock_guard producer(p->sendLock);
  if (!outbound_[p->local].empty() || !p->out.withinCredit(p->eagerSent + n, eagerCredit_)) return false;
  auto* h = p->out.reserve(static_cast<std::uint32_t>(sizeof(shm::MsgHeader) + n));
  if (!h) return false;
  h->type = static_cast<std::uint16_t>(shm::RecType::kEager);
  h->flags = 0;
  h->ctx = c.ctx;
  h->src = c.rank;
  h->tag = a.tag;
  h->seq = p->seqOut++;
  h->size = n;
  h->msgId = newMsgId();
  h->addr = 0;
  if (n) std::memcpy(h + 1, src, n);
  p->out.commit();
  p->eagerSent += n;
  ++stats_.eager;
  *rc = MPI_SUCCESS;
  return true;
}

bool ShmEngine::tryRecvNow(const base::RecvArgs& a, const CommInfo& c, MPI_Status* st, int* rc,
                           std::optional<mem::MemInfo>* seen) {
  base::Span s = base::spanOf(a.count, a.type);
  if (!s.contiguous || a.tag == MPI_ANY_TAG) return false;
  char* dst = static_cast<char*>(const_cast<void*>(base::spanStart(a.buf, s)));
  if (s.dataBytes && base::cuda::usable()) {
    auto m = mem::classify(dst, s.dataBytes);
    if (m.isOk() && seen && s.bytes == s.dataBytes) *seen = m.value();
    if (!m.isOk() || m.value().onGpu()) return false;
  }
  shm::Peer* p = c.peer[a.peer];
  std::unique_lock lock(mutex_);
  CtxQueues& q = queuesOf(c.ctx);
  for (unsigned spins = 0;; ++spins) {
    if (!q.unexpected.empty() || !q.posted.empty() || p->dead) return false;
    const shm::MsgHeader* h = p->in.peek();
    if (h && h->type == static_cast<std::uint16_t>(shm::RecType::kEager) && h->ctx == c.ctx && h->src == a.peer &&
        h->tag == a.tag && h->seq == p->seqIn && h->size <= s.dataBytes && !(h->flags & shm::kFlagSync) &&
        h->len >= sizeof(shm::MsgHeader) + h->size) {
      if (h->size) std::memcpy(dst, h + 1, h->size);
      std::size_t n = h->size;
      ++p->seqIn;
      p->in.addConsumed(n);
      p->in.pop();
      if (st != MPI_STATUS_IGNORE) {
        int keep = st->MPI_ERROR;
        base::setEmptyStatus(st);
        st->MPI_SOURCE = a.peer;
        st->MPI_TAG = a.tag;
        st->MPI_ERROR = keep;
        PMPI_Status_set_elements_x(st, MPI_BYTE, static_cast<MPI_Count>(n));
      }
      *rc = MPI_SUCCESS;
      return true;
    }
    if (h || (spins & 63) == 63) {
      if (!inProgress_) {
        inProgress_ = true;
        step();  // anything else (other records, other peers) takes the general path
        inProgress_ = false;
      }
      if (h) continue;
    }
    if ((spins & 1023) == 1023) {
      lock.unlock();  // let other threads in, and yield on an oversubscribed host
      sched_yield();
      lock.lock();
      if (!peerAlive(*p)) return false;
    }
  }
}

// Matches the earliest unexpected message, else posts. Messages still in the rings arrived
// after every unexpected one from the same sender, so they are matched later, in order.
void ShmEngine::start(ShmRecv& op, const CommInfo& c) {
  std::lock_guard lock(mutex_);
  if (op.gpuTarget() && op.sourcePeer()) pinFor(*op.sourcePeer());
  CtxQueues& q = queuesOf(c.ctx);
  for (auto it = q.unexpected.begin(); it != q.unexpected.end(); ++it) {
    Unexpected& u = **it;
    if (!op.matches(u.src, u.tag)) continue;
    std::unique_ptr<Unexpected> m = std::move(*it);
    q.unexpected.erase(it);
    stats_.unexpectedBytes -= m->data.size();
    if (m->rts) op.startRendezvous(*m->from, *m);
    else op.deliverEager(*m->from, *m, m->data.data());
    return;
  }
  q.posted.push_back(&op);
  if (op.mixed()) holdBehind(c.ctx, &op);
  else if (gpu() && op.sourcePeer()) advertise(op, q);
}

base::Result<std::unique_ptr<base::Op>> ShmEngine::irecv(const base::RecvArgs& a, const CommInfo& c, bool mixed) {
  auto target = RecvTarget::prepare(a.buf, a.count, a.type);
  if (!target.isOk()) return target.status();
  auto op = std::make_unique<ShmRecv>(*this, a, c, std::move(target.value()), mixed);
  start(*op, c);
  return std::unique_ptr<base::Op>(std::move(op));
}

bool ShmEngine::iprobe(const CommInfo& c, int src, int tag, MPI_Status* st, std::unique_ptr<Unexpected>* take) {
  std::lock_guard lock(mutex_);
  progress();
  CtxQueues& q = queuesOf(c.ctx);
  for (auto it = q.unexpected.begin(); it != q.unexpected.end(); ++it) {
    Unexpected& u = **it;
    if ((src != MPI_ANY_SOURCE && src != u.src) || (tag != MPI_ANY_TAG && tag != u.tag)) continue;
    u.probed = true;
    if (st != MPI_STATUS_IGNORE) {
      base::setEmptyStatus(st);
      st->MPI_SOURCE = u.src;
      st->MPI_TAG = u.tag;
      PMPI_Status_set_elements_x(st, MPI_BYTE, static_cast<MPI_Count>(u.size));
    }
    if (take) {
      stats_.unexpectedBytes -= (*it)->data.size();
      *take = std::move(*it);
      q.unexpected.erase(it);
    }
    return true;
  }
  return false;
}

base::Result<std::unique_ptr<base::Op>> ShmEngine::mrecv(std::unique_ptr<Unexpected> m, const base::RecvArgs& a,
                                                         const CommInfo& c) {
  auto target = RecvTarget::prepare(a.buf, a.count, a.type);
  if (!target.isOk()) return target.status();
  std::lock_guard lock(mutex_);
  auto op = std::make_unique<ShmRecv>(*this, a, c, std::move(target.value()), false);
  if (m->rts) op->startRendezvous(*m->from, *m);
  else op->deliverEager(*m->from, *m, m->data.data());
  return std::unique_ptr<base::Op>(std::move(op));
}

void ShmEngine::pumpSends(mem::PollPass* pass) {
  for (auto it = streaming_.begin(); it != streaming_.end();) {
    ShmSend* s = *it++;
    s->pump(pass);  // finishing removes it from the list
  }
  for (auto& q : outbound_) {
    while (!q.empty()) {
      ShmSend* s = q.front();
      if (!s->tryPost()) break;
      if (!q.empty() && q.front() == s) q.pop_front();
    }
  }
}

void ShmEngine::reapAdopted() {
  for (size_t i = 0; i < adopted_.size();) {
    auto* s = static_cast<ShmSend*>(adopted_[i].get());
    if (!s->finished() && s->peer().dead) s->fail(base::Status(base::Errc::kPeerLost, "peer died"));
    if (s->finished()) {
      adopted_[i] = std::move(adopted_.back());
      adopted_.pop_back();
    } else {
      ++i;
    }
  }
}

bool ShmEngine::holding(int ctx) {
  if (holds_.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard lock(mutex_);
  auto it = realOrder_.find(ctx);
  return it != realOrder_.end() && !it->second.empty();
}

void ShmEngine::holdBehind(int ctx, ShmRecv* wildcard) {
  realOrder_[ctx].push_back({wildcard, nullptr});
  holds_.fetch_add(1, std::memory_order_relaxed);
}

void ShmEngine::holdBehind(int ctx, HeldRecv* held) {
  realOrder_[ctx].push_back({nullptr, held});
  holds_.fetch_add(1, std::memory_order_relaxed);
}

void ShmEngine::dropFromOrder(const base::Op* op) {
  for (auto& [ctx, items] : realOrder_) {
    for (auto it = items.begin(); it != items.end(); ++it) {
      if (it->wildcard == op || it->held == op) {
        items.erase(it);
        holds_.fetch_sub(1, std::memory_order_relaxed);
        return;
      }
    }
  }
}

// Only the oldest pending item of a context may touch the real MPI: a held receive is posted
// when it reaches the front; a mixed wildcard at the front probes the real MPI.
void ShmEngine::pumpRealOrder() {
  for (auto& [ctx, items] : realOrder_) {
    while (!items.empty()) {
      OrderItem it = items.front();
      if (it.held) {
        it.held->release();
      } else if (it.wildcard->posted() && !it.wildcard->probeReal()) {
        break;
      }
      items.pop_front();
      holds_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
}

bool ShmEngine::step() {
  bool any = false;
  if (gpu_) mem::residentKeepAlive();
  releaseHeld();
  draining_ = true;
  for (auto& p : ep_->peers()) {
    if (p->dead) continue;
    any = drainControl(*p) | any;
    if (pollDelivered_ && !adverts_[p->local].empty()) any = drainDelivered(*p) | any;
    any = drainMessages(*p) | any;
  }
  draining_ = false;
  releaseHeld();  // the pulls of the envelopes just read, together
  mem::PollPass pass;  // the receives' copies share cgdr's streams: ask about each stream once
  for (std::size_t i = 0; i < copying_.size();) {
    ShmRecv* r = copying_[i];
    if (!r->pollCopies(&pass)) {
      ++i;
      continue;
    }
    unwatchCopies(r);  // (a failed receive has unwatched itself already): i is the next one now
    any = true;
  }
  flushCtl();
  pumpSends(&pass);
  releaseHeld();  // pushes held by the sends just posted
  if (!adopted_.empty()) reapAdopted();
  // Now and then, what peers sent over the cuMem link (releases of memory they freed).
  if (gpu_ && (++steps_ & 4095) == 0) gpu_->drainLink();
  return any;
}

void ShmEngine::progress() {
  std::lock_guard lock(mutex_);
  if (inProgress_) return;  // reached again from inside a callback
  inProgress_ = true;
  step();
  if (holds_.load(std::memory_order_relaxed)) pumpRealOrder();
  inProgress_ = false;
}

bool ShmEngine::progressShm() {
  std::lock_guard lock(mutex_);
  if (inProgress_) return false;
  inProgress_ = true;
  bool any = step();
  inProgress_ = false;
  return any;
}

}  // namespace cgdr::engine
