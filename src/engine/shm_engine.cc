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
  if (gStats.get()) {
    const Stats& s = e->stats_;
    CGDR_LOG(kWarn, kShm,
             "stats: eager %llu, rendezvous %llu (single copy %llu; into GPU buffers pushed %llu, pulled %llu; "
             "pipelined %llu), peak unexpected eager bytes %zu, shared segment %zu bytes",
             static_cast<unsigned long long>(s.eager), static_cast<unsigned long long>(s.rendezvous),
             static_cast<unsigned long long>(s.singleCopy), static_cast<unsigned long long>(s.pushed),
             static_cast<unsigned long long>(s.pulled), static_cast<unsigned long long>(s.pipelined),
             s.peakUnexpectedBytes, e->segmentBytes());
    if (s.railed) {
      double lowest = 1;
      for (auto& p : e->endpoint().peers()) lowest = std::min(lowest, p->railFactor);
      CGDR_LOG(kWarn, kShm,
               "stats: host rail: %llu pushes sent %llu bytes through host memory beside NVLink (%llu with traffic "
               "both ways: tails late %llu, first %llu; governor now %.3f, lowest over peers)",
               static_cast<unsigned long long>(s.railed), static_cast<unsigned long long>(s.railBytes),
               static_cast<unsigned long long>(s.railedBoth), static_cast<unsigned long long>(s.railLate),
               static_cast<unsigned long long>(s.railEarly), lowest);
    }
    if (e->gpu_) {
      auto [ok, refused] = e->gpu_->pinCounts();
      if (ok + refused)
        CGDR_LOG(kWarn, kShm, "stats: host chunks page-locked for GPU copies: %zu regions (%zu refused)", ok, refused);
    }
    if (s.unpinnedCopies)
      CGDR_LOG(kWarn, kShm, "stats: host chunks not page-locked for %llu GPU copies (a missed pinFor)",
               static_cast<unsigned long long>(s.unpinnedCopies));
    if (s.advertised)
      CGDR_LOG(kWarn, kShm,
               "stats: adverts: %llu receives advertised, %llu claimed by their sender (%llu ended by a word its GPU "
               "set), %llu retracted; this rank's GPU set %llu such words",
               static_cast<unsigned long long>(s.advertised), static_cast<unsigned long long>(s.advertsClaimed),
               static_cast<unsigned long long>(s.advertsDelivered), static_cast<unsigned long long>(s.advertsRetracted),
               static_cast<unsigned long long>(s.deliveredByGpu));
    if (s.advertWaits)
      CGDR_LOG(kWarn, kShm,
               "stats: advert waits: %llu sends waited (%llu non-blocking ones within their call, %llu of which found "
               "one), %llu found one (%.2f us on average, longest %.1f us), %llu ran out",
               static_cast<unsigned long long>(s.advertWaits), static_cast<unsigned long long>(s.advertWaitsNonBlocking),
               static_cast<unsigned long long>(s.advertWaitFoundNonBlocking),
               static_cast<unsigned long long>(s.advertWaitFound),
               s.advertWaitFound ? static_cast<double>(s.advertWaitNs) / static_cast<double>(s.advertWaitFound) / 1e3 : 0.0,
               static_cast<double>(s.advertWaitLongestNs) / 1e3, static_cast<unsigned long long>(s.advertWaitRanOut));
    std::string line;
    for (int c = 0; c < static_cast<int>(sched::Channel::kCount); ++c)
      if (s.channel[c])
        line += std::string(line.empty() ? "" : ", ") + sched::channelName(static_cast<sched::Channel>(c)) + " " +
                std::to_string(s.channel[c]);
    if (!line.empty()) CGDR_LOG(kWarn, kShm, "stats: channels: %s", line.c_str());
    mem::CopyCounts cc = mem::copyCounts();
    if (cc.graph + cc.plain + cc.batched + cc.resident)
      CGDR_LOG(kWarn, kShm, "stats: GPU copies: graph %llu (repeated %llu), plain %llu, by the copy kernel %llu in "
               "%llu launches (%llu held pushes, %llu held pulls; largest %llu bytes), by the resident kernel %llu "
               "in %llu launches (%llu made on the copy engine after it left, %llu while it did not run, %llu while "
               "full; %llu batches shared with its helpers; %llu times it left switched out, %llu when asked, longest "
               "%.1f us between looks; %llu waited for its start, %.1f us on average); completion asked %llu, "
               "inferred from stream order %llu",
               cc.graph, cc.repeated, cc.plain, cc.batched, cc.kernels, static_cast<unsigned long long>(s.heldPushes),
               static_cast<unsigned long long>(s.heldPulls), cc.batchedLargest, cc.resident, cc.residentLaunches,
               cc.residentRedone, cc.residentNotRunning, cc.residentFull, cc.residentCrewed, cc.residentTurned,
               cc.residentLeftAsked, static_cast<double>(cc.residentLongestNs) / 1e3, cc.residentWaited,
               cc.residentWaited ? static_cast<double>(cc.residentWaitedNs) / 1e3 / cc.residentWaited : 0.0, cc.asked,
               cc.inferred);
    if (e->gpu_) {
      auto lc = e->gpu_->linkCounts();
      if (lc.held + lc.released)
        CGDR_LOG(kWarn, kShm, "stats: peers' cuMem memory: %zu mappings held at exit, %zu dropped when freed",
                 lc.held, lc.released);
    }
    mem::HeapStats hs = mem::heapStats();
    if (hs.served + hs.asyncServed + hs.fallbacks + hs.deferred)
      CGDR_LOG(kWarn, kShm, "stats: exportable heap: %zu cudaMalloc served, %zu cudaMallocAsync served (%zu reused "
               "on their stream; %zu fell back), %zu cudaFreeAsync waited for their stream (%zu in a capture, kept), "
               "%zu chunks of %zu MiB (%zu shared, %zu idle of %zu MiB, %zu trimmed), %zu live", hs.served,
               hs.asyncServed, hs.reused, hs.fallbacks, hs.deferred, hs.captured, hs.chunks, hs.chunkBytes >> 20,
               hs.sharedChunks, hs.idleChunks, hs.idleBytes >> 20, hs.trimmed, hs.live);
    if (tracing()) {
      static const char* names[] = {"send-build", "envelope",    "recv-choose", "copy-issue",
                                    "copy-run",   "cts",         "pushed",      "recv-finish",
                                    "turnaround", "recv-return", "send-entry",  "done-advert",
                                    "done-look"};
      static_assert(sizeof names / sizeof *names == kTrCount);
      line.clear();
      for (int t = 0; t < kTrCount; ++t)
        if (e->traceCount_[t]) {
          auto& v = e->traceSamples_[t];
          std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
          char b[112];
          std::snprintf(b, sizeof b, "%s%s %.2f / %.2f us (%llu)", line.empty() ? "" : ", ", names[t],
                        double(v[v.size() / 2]) / 1000.0, double(e->traceSum_[t]) / double(e->traceCount_[t]) / 1000.0,
                        static_cast<unsigned long long>(e->traceCount_[t]));
          line += b;
        }
      CGDR_LOG(kWarn, kShm, "stats: GPU rendezvous trace (median / mean): %s", line.c_str());
    }
    for (int b = 0; b < 65; ++b) {
      if (!s.bySize[b]) continue;
      line.clear();
      for (int c = 0; c < static_cast<int>(sched::Channel::kCount); ++c)
        if (s.bySize[b] & (1u << c))
          line += std::string(line.empty() ? "" : ",") + sched::channelName(static_cast<sched::Channel>(c));
      unsigned long long lo = b == 0 ? 0 : 1ull << (b - 1), hi = b == 0 ? 0 : b == 64 ? ~0ull : (1ull << b) - 1;
      CGDR_LOG(kWarn, kShm, "stats: sizes %llu..%llu: %s", lo, hi, line.c_str());
    }
  }
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
