#include "engine/p2p.hpp"
#include "sched/tracer.hpp"

#include "base/cuda.hpp"
#include "base/dtype.hpp"
#include "base/errors.hpp"
#include "channel/net/net_recv.hpp"
#include "channel/net/net_send.hpp"
#include "channel/net/send_order.hpp"
#include "engine/checks.hpp"
#include "engine/comm_table.hpp"
#include "engine/handles.hpp"
#include "engine/held.hpp"
#include "engine/messages.hpp"
#include "engine/msg_data.hpp"
#include "engine/pair_op.hpp"
#include "engine/progress.hpp"
#include "engine/real_op.hpp"
#include "engine/shm_engine.hpp"
#include "engine/shm_ops.hpp"
#include "mem/classify.hpp"

#include <cstring>
#include <utility>
#include <variant>
#include <vector>

namespace cgdr::engine {
using base::raise;
using base::settleError;
namespace net = channel::net;
using base::Result;
using base::Status;

namespace {

// Where a buffer lives and which bytes it covers.
struct Located {
  mem::MemInfo mem;
  base::Span span;
};

Result<Located> locate(const void* buf, int count, MPI_Datatype type) {
  Located l;
  if (!base::cuda::usable() || buf == MPI_IN_PLACE) return l;  // no GPU memory can exist
  l.span = base::spanOf(count, type);
  if (l.span.bytes == 0) return l;
  auto m = mem::classify(base::spanStart(buf, l.span), l.span.bytes);
  if (!m.isOk()) return m.status();
  l.mem = m.value();
  return l;
}

// Completes an op the caller waited for, raising a cgdr failure on its communicator.
int finishBlocking(base::Op& op, MPI_Status* st) {
  copyStatus(st, op.status);
  return settleError(op.comm, op.error, op.errorRaised, op.failure);
}

enum class Route { kReal, kEngine, kMixed };

// Who serves a peer of a communicator: the engine (co-located) or the real MPI.
Route routeOf(MPI_Comm comm, int peer, const CommInfo** info) {
  *info = nullptr;
  if (!ShmEngine::get() || peer == MPI_PROC_NULL) return Route::kReal;
  const CommInfo* c = comms::find(comm);
  if (!c || !c->anyLocal) return Route::kReal;
  *info = c;
  if (peer == MPI_ANY_SOURCE) return c->anyRemote ? Route::kMixed : Route::kEngine;
  if (peer < 0 || peer >= c->size || !c->peer[peer]) return Route::kReal;
  return Route::kEngine;
}

Result<std::unique_ptr<base::Op>> realSend(const base::SendArgs& a) {
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return loc.status();
  if (!loc.value().mem.onGpu() && !net::send_order::blocked(a.comm, a.peer)) {
    MPI_Request r;
    int rc = base::pmpiIsend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, &r);
    auto op = std::make_unique<RealOp>(rc == MPI_SUCCESS ? r : MPI_REQUEST_NULL, a.comm);
    if (rc != MPI_SUCCESS) {
      op->error = rc;
      op->errorRaised = true;
    }
    return std::unique_ptr<base::Op>(std::move(op));
  }
  auto s = net::NetSend::create(a, loc.value().mem, loc.value().span);
  if (!s.isOk()) return s.status();
  return std::unique_ptr<base::Op>(std::move(s.value()));
}

// An engine send; buffered ones are adopted by the engine (the caller's part is complete).
Result<std::unique_ptr<base::Op>> engineSend(const base::SendArgs& a, const CommInfo& c,
                                             const std::optional<mem::MemInfo>& seen = std::nullopt) {
  ShmEngine& e = *ShmEngine::get();
  auto op = e.isend(a, c, c.peer[a.peer], seen);
  if (!op.isOk() || a.mode != base::SendMode::kBuffered) return op;
  std::lock_guard lock(e.mutex());
  e.adopt(std::move(op.value()));
  auto done = std::make_unique<RealOp>(MPI_REQUEST_NULL, a.comm);
  base::setEmptyStatus(&done->status);
  return std::unique_ptr<base::Op>(std::move(done));
}

// An engine receive (specific co-located source or wildcard); mixed wildcards also watch the
// real MPI, and hold back later receives from remote peers.
Result<std::unique_ptr<base::Op>> engineRecv(const base::RecvArgs& a, const CommInfo& c, bool mixed) {
  if (a.peer >= 0) sched::tracer().count(c.world[a.peer], true);
  return ShmEngine::get()->irecv(a, c, mixed);
}

// A blocking engine receive, its operation on the stack.
int engineRecvBlocking(const base::RecvArgs& a, const CommInfo& c, bool mixed, MPI_Status* st) {
  ShmEngine& e = *ShmEngine::get();
  int rc = MPI_SUCCESS;
  if (a.peer >= 0) sched::tracer().count(c.world[a.peer], false);
  std::optional<mem::MemInfo> seen;
  if (!mixed && a.peer >= 0 && e.tryRecvNow(a, c, st, &rc, &seen)) return rc;
  auto target = RecvTarget::prepare(a.buf, a.count, a.type, seen);
  if (!target.isOk()) return raise(a.comm, target.status());
  std::uint64_t tracedBefore = ShmEngine::tracing() ? e.lastRecvDone.load() : 0;  // a traced receive sets a new time
  int result;
  {
    ShmRecv op(e, a, c, std::move(target.value()), mixed);
    e.start(op, c);
    if (!op.poll()) waitFor(op);
    result = finishBlocking(op, st);
  }
  if (std::uint64_t done = ShmEngine::tracing() ? e.lastRecvDone.load() : 0; done && done != tracedBefore)
    e.trace(ShmEngine::kTrRecvReturn, done);
  return result;
}

Result<std::unique_ptr<base::Op>> heldRecv(const base::RecvArgs& a, const CommInfo& c) {
  ShmEngine& e = *ShmEngine::get();
  std::lock_guard lock(e.mutex());
  auto op = std::make_unique<HeldRecv>(e, a);
  e.holdBehind(c.ctx, op.get());
  return std::unique_ptr<base::Op>(std::move(op));
}

int raiseOr(MPI_Comm comm, const Status& s) { return raise(comm, s); }

}  // namespace

void copyStatus(MPI_Status* dst, const MPI_Status& src) {
  if (dst == MPI_STATUS_IGNORE) return;
  int keep = dst->MPI_ERROR;
  *dst = src;
  dst->MPI_ERROR = keep;
}

Result<std::unique_ptr<base::Op>> makeSend(const base::SendArgs& a) {
  const CommInfo* c;
  if (routeOf(a.comm, a.peer, &c) == Route::kEngine) return engineSend(a, *c);
  return realSend(a);
}

Result<std::unique_ptr<base::Op>> makeRealRecv(const base::RecvArgs& a) {
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return loc.status();
  if (!loc.value().mem.onGpu()) {
    MPI_Request r;
    int rc = PMPI_Irecv(a.buf, a.count, a.type, a.peer, a.tag, a.comm, &r);
    auto op = std::make_unique<RealOp>(rc == MPI_SUCCESS ? r : MPI_REQUEST_NULL, a.comm);
    if (rc != MPI_SUCCESS) {
      op->error = rc;
      op->errorRaised = true;
    }
    return std::unique_ptr<base::Op>(std::move(op));
  }
  auto r = net::NetRecv::create(a, loc.value().mem, loc.value().span, nullptr);
  if (!r.isOk()) return r.status();
  return std::unique_ptr<base::Op>(std::move(r.value()));
}

// A receive from MPI_PROC_NULL: complete at once with the status MPI prescribes (some MPIs
// report source 0 for a non-blocking one).
class ProcNullRecv final : public base::Op {
 public:
  explicit ProcNullRecv(MPI_Comm c) {
    comm = c;
    base::setEmptyStatus(&status);
    status.MPI_SOURCE = MPI_PROC_NULL;
  }
  bool poll() override { return true; }
};

Result<std::unique_ptr<base::Op>> makeRecv(const base::RecvArgs& a) {
  if (a.peer == MPI_PROC_NULL) return std::unique_ptr<base::Op>(std::make_unique<ProcNullRecv>(a.comm));
  const CommInfo* c;
  Route r = routeOf(a.comm, a.peer, &c);
  if (r != Route::kReal) return engineRecv(a, *c, r == Route::kMixed);
  if (c && ShmEngine::get()->holding(c->ctx)) return heldRecv(a, *c);
  if (!c) {
    const CommInfo* known = ShmEngine::get() ? comms::find(a.comm) : nullptr;
    if (known && ShmEngine::get()->holding(known->ctx)) return heldRecv(a, *known);
  }
  return makeRealRecv(a);
}

int isend(const base::SendArgs& a, MPI_Request* r) {
  if (int rc = checks::send(a, checks::Call::kNonBlocking, r); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  if (routeOf(a.comm, a.peer, &c) == Route::kEngine) {
    sched::tracer().count(c->world[a.peer], true);
    auto op = engineSend(a, *c);
    if (!op.isOk()) return raiseOr(a.comm, op.status());
    *r = handles::add(std::move(op.value()));
    return MPI_SUCCESS;
  }
  if (a.peer == MPI_PROC_NULL)
    return base::pmpiIsend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, r);
  if (int rc = checks::sendPeer(a, checks::Call::kNonBlocking, r); rc != MPI_SUCCESS) return rc;
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu() && !net::send_order::blocked(a.comm, a.peer))
    return base::pmpiIsend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, r);
  auto s = net::NetSend::create(a, loc.value().mem, loc.value().span);
  if (!s.isOk()) return raise(a.comm, s.status());
  *r = handles::add(std::move(s.value()));
  return MPI_SUCCESS;
}

int send(const base::SendArgs& a) {
  if (int rc = checks::send(a, checks::Call::kBlocking, nullptr); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  if (routeOf(a.comm, a.peer, &c) == Route::kEngine) {
    int rc = MPI_SUCCESS;
    if (ShmEngine::tracing()) ShmEngine::get()->sendEntered = ShmEngine::traceNow();
    sched::tracer().count(c->world[a.peer], false);
    std::optional<mem::MemInfo> seen;
    if (ShmEngine::get()->trySendNow(a, *c, c->peer[a.peer], &rc, &seen)) {
      if (ShmEngine::tracing()) ShmEngine::get()->sendEntered = 0;  // no GPU envelope follows to be traced
      return rc;
    }
    base::SendArgs b = a;
    b.blocking = true;
    auto op = engineSend(b, *c, seen);
    if (!op.isOk()) return raise(a.comm, op.status());
    waitFor(*op.value());
    return finishBlocking(*op.value(), MPI_STATUS_IGNORE);
  }
  if (a.peer == MPI_PROC_NULL)
    return base::pmpiSend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm);
  if (int rc = checks::sendPeer(a, checks::Call::kBlocking, nullptr); rc != MPI_SUCCESS) return rc;
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu()) {
    beforeBlocking();
    if (!mustPoll()) return base::pmpiSend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm);
    MPI_Request r;
    int rc = base::pmpiIsend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, &r);
    return rc != MPI_SUCCESS ? rc : pollReal(&r, MPI_STATUS_IGNORE);
  }
  auto s = net::NetSend::create(a, loc.value().mem, loc.value().span);
  if (!s.isOk()) return raise(a.comm, s.status());
  net::send_order::flush(a.comm, a.peer);
  waitFor(*s.value());
  return finishBlocking(*s.value(), MPI_STATUS_IGNORE);
}

int irecv(const base::RecvArgs& a, MPI_Request* r) {
  if (int rc = checks::recv(a, checks::Call::kNonBlocking, r); rc != MPI_SUCCESS) return rc;
  // On every route: asking which route first costs one more lookup than the check itself.
  if (int rc = checks::recvPeer(a, checks::Call::kNonBlocking, r); rc != MPI_SUCCESS) return rc;
  auto op = makeRecv(a);
  if (!op.isOk()) return raise(a.comm, op.status());
  if (auto* real = dynamic_cast<RealOp*>(op.value().get()); real && real->error != MPI_SUCCESS) return real->error;
  *r = handles::add(std::move(op.value()));
  return MPI_SUCCESS;
}

int recv(const base::RecvArgs& a, MPI_Status* st) {
  if (int rc = checks::recv(a, checks::Call::kBlocking, nullptr); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  Route route = routeOf(a.comm, a.peer, &c);
  bool held = false;
  if (route == Route::kReal && a.peer != MPI_PROC_NULL && ShmEngine::get()) {
    const CommInfo* known = comms::find(a.comm);
    held = known && ShmEngine::get()->holding(known->ctx);
  }
  if (route != Route::kReal) return engineRecvBlocking(a, *c, route == Route::kMixed, st);
  if (int rc = checks::recvPeer(a, checks::Call::kBlocking, nullptr); rc != MPI_SUCCESS) return rc;
  if (!held) {
    auto loc = locate(a.buf, a.count, a.type);
    if (!loc.isOk()) return raise(a.comm, loc.status());
    if (!loc.value().mem.onGpu() || a.peer == MPI_PROC_NULL) {
      beforeBlocking();
      if (!mustPoll()) return PMPI_Recv(a.buf, a.count, a.type, a.peer, a.tag, a.comm, st);
      MPI_Request r;
      int rc = PMPI_Irecv(a.buf, a.count, a.type, a.peer, a.tag, a.comm, &r);
      return rc != MPI_SUCCESS ? rc : pollReal(&r, st);
    }
  }
  auto op = makeRecv(a);
  if (!op.isOk()) return raise(a.comm, op.status());
  beforeBlocking();
  waitFor(*op.value());
  return finishBlocking(*op.value(), st);
}

int imrecv(const base::RecvArgs& a, MPI_Message* m, MPI_Request* r) {
  if (!m) return PMPI_Imrecv(a.buf, a.count, a.type, m, r);  // the real MPI reports it
  if (const CommInfo* c = messages::ours(*m)) {
    base::RecvArgs ra = a;
    ra.comm = c->comm;
    if (int rc = checks::matchedRecv(ra, checks::Call::kNonBlocking, r); rc != MPI_SUCCESS) return rc;
    auto msg = messages::take(*m, &c);
    *m = MPI_MESSAGE_NULL;
    auto op = ShmEngine::get()->mrecv(std::move(msg), ra, *c);
    if (!op.isOk()) return raise(c->comm, op.status());
    *r = handles::add(std::move(op.value()));
    return MPI_SUCCESS;
  }
  if (!r) return PMPI_Imrecv(a.buf, a.count, a.type, m, r);
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu() || *m == MPI_MESSAGE_NO_PROC) return PMPI_Imrecv(a.buf, a.count, a.type, m, r);
  auto op = net::NetRecv::create(a, loc.value().mem, loc.value().span, m);
  if (!op.isOk()) return raise(a.comm, op.status());
  *r = handles::add(std::move(op.value()));
  return MPI_SUCCESS;
}

int mrecv(const base::RecvArgs& a, MPI_Message* m, MPI_Status* st) {
  if (!m) return PMPI_Mrecv(a.buf, a.count, a.type, m, st);  // the real MPI reports it
  if (const CommInfo* c = messages::ours(*m)) {
    base::RecvArgs ra = a;
    ra.comm = c->comm;
    if (int rc = checks::matchedRecv(ra, checks::Call::kBlocking, nullptr); rc != MPI_SUCCESS) return rc;
    MPI_Request r;
    int rc = imrecv(a, m, &r);
    if (rc != MPI_SUCCESS) return rc;
    base::Op* op = handles::find(r);
    waitFor(*op);
    int err = finishBlocking(*op, st);
    (void)handles::take(r);
    return err;
  }
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu() || *m == MPI_MESSAGE_NO_PROC) {
    beforeBlocking();
    if (!mustPoll()) return PMPI_Mrecv(a.buf, a.count, a.type, m, st);
    MPI_Request r;
    int rc = PMPI_Imrecv(a.buf, a.count, a.type, m, &r);
    return rc != MPI_SUCCESS ? rc : pollReal(&r, st);
  }
  auto op = net::NetRecv::create(a, loc.value().mem, loc.value().span, m);
  if (!op.isOk()) return raise(a.comm, op.status());
  beforeBlocking();
  waitFor(*op.value());
  return finishBlocking(*op.value(), st);
}

int iprobe(int src, int tag, MPI_Comm comm, int* flag, MPI_Status* st) {
  if (int rc = checks::probe(tag, comm, false, flag, nullptr, false); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  Route r = routeOf(comm, src, &c);
  progressAll();
  if (r != Route::kReal && ShmEngine::get()->iprobe(*c, src, tag, st, nullptr)) {
    *flag = 1;
    return MPI_SUCCESS;
  }
  if (r == Route::kEngine) {
    *flag = 0;
    return MPI_SUCCESS;
  }
  return PMPI_Iprobe(src, tag, comm, flag, st);
}

int probe(int src, int tag, MPI_Comm comm, MPI_Status* st) {
  if (int rc = checks::probe(tag, comm, true, nullptr, nullptr, false); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  if (routeOf(comm, src, &c) == Route::kReal && !mustPoll()) {
    beforeBlocking();
    return PMPI_Probe(src, tag, comm, st);
  }
  Backoff b;
  for (int flag = 0;;) {
    int rc = iprobe(src, tag, comm, &flag, st);
    if (rc != MPI_SUCCESS || flag) return rc;
    b.pause();
  }
}

int improbe(int src, int tag, MPI_Comm comm, int* flag, MPI_Message* m, MPI_Status* st) {
  if (int rc = checks::probe(tag, comm, false, flag, m, true); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  Route r = routeOf(comm, src, &c);
  progressAll();
  if (r != Route::kReal) {
    std::unique_ptr<Unexpected> msg;
    if (ShmEngine::get()->iprobe(*c, src, tag, st, &msg)) {
      *m = messages::add(std::move(msg), c);
      *flag = 1;
      return MPI_SUCCESS;
    }
    if (r == Route::kEngine) {
      *flag = 0;
      return MPI_SUCCESS;
    }
  }
  return PMPI_Improbe(src, tag, comm, flag, m, st);
}

int mprobe(int src, int tag, MPI_Comm comm, MPI_Message* m, MPI_Status* st) {
  if (int rc = checks::probe(tag, comm, true, nullptr, m, true); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  if (routeOf(comm, src, &c) == Route::kReal && !mustPoll()) {
    beforeBlocking();
    return PMPI_Mprobe(src, tag, comm, m, st);
  }
  Backoff b;
  for (int flag = 0;;) {
    int rc = improbe(src, tag, comm, &flag, m, st);
    if (rc != MPI_SUCCESS || flag) return rc;
    b.pause();
  }
}

namespace {

// The bytes of a send-receive-replace's buffer, copied before the receive overwrites them (to
// host memory, or to page-locked memory from the GPU) and sent from there with the same datatype.
struct ReplaceCopy {
  std::vector<char> host;
  net::StagedSpan staged;
  bool gpu = false;
  std::ptrdiff_t lo = 0;  // the span's lower bound

  // What the send sends from (computed here: moving the copy keeps its bytes where they are).
  const void* from() const { return gpu ? staged.mpiBuf() : host.data() - lo; }

  static Result<ReplaceCopy> make(const base::SendArgs& s, const mem::MemInfo& m) {
    base::Span span = base::spanOf(s.count, s.type);
    ReplaceCopy c;
    c.gpu = m.onGpu();
    c.lo = span.lo;
    if (c.gpu) {
      auto sp = net::StagedSpan::make(s.buf, span, m.device);
      if (!sp.isOk()) return sp.status();
      c.staged = std::move(sp.value());
      Status cs = mem::copySync(c.staged.hostStart(), c.staged.gpuStart(), span.bytes, m.device, mem::CopyDir::kToHost);
      if (!cs.isOk()) return cs;
    } else {
      const char* start = static_cast<const char*>(base::spanStart(s.buf, span));
      c.host.assign(start, start + span.bytes);
    }
    return c;
  }
};

// The receive and send of a send-receive, the receive posted first; `s.buf` is what the send
// sends from.
Result<std::pair<std::unique_ptr<base::Op>, std::unique_ptr<base::Op>>> makePair(const base::SendArgs& s,
                                                                                  const base::RecvArgs& r) {
  auto recvOp = makeRecv(r);
  if (!recvOp.isOk()) return recvOp.status();
  auto sendOp = makeSend(s);
  if (!sendOp.isOk()) {
    (void)recvOp.value()->cancel();
    waitFor(*recvOp.value());
    return sendOp.status();
  }
  return std::pair(std::move(recvOp.value()), std::move(sendOp.value()));
}

// A send-receive-replace's copy of its buffer and its two halves, the send sending from the copy.
struct ReplaceOps {
  ReplaceCopy copy;
  std::unique_ptr<base::Op> recv, send;
};

Result<ReplaceOps> makeReplace(const base::SendArgs& s, const base::RecvArgs& r, const mem::MemInfo& m) {
  auto copy = ReplaceCopy::make(s, m);
  if (!copy.isOk()) return copy.status();
  base::SendArgs from = s;
  from.buf = copy.value().from();
  auto ops = makePair(from, r);
  if (!ops.isOk()) return ops.status();
  return ReplaceOps{std::move(copy.value()), std::move(ops.value().first), std::move(ops.value().second)};
}

// Waits for both halves of a blocking send-receive; the receive's error, else the send's.
int waitPair(base::Op& recvOp, base::Op& sendOp, MPI_Status* st) {
  waitFor(sendOp);
  waitFor(recvOp);
  int rcSend = finishBlocking(sendOp, MPI_STATUS_IGNORE);
  int rcRecv = finishBlocking(recvOp, st);
  return rcRecv != MPI_SUCCESS ? rcRecv : rcSend;
}

}  // namespace

int sendrecv(const base::SendArgs& s, const base::RecvArgs& r, MPI_Status* st) {
  if (int rc = checks::sendrecv(s, r); rc != MPI_SUCCESS) return rc;
  const CommInfo* c;
  bool engine = routeOf(s.comm, s.peer, &c) != Route::kReal || routeOf(r.comm, r.peer, &c) != Route::kReal;
  if (!engine && !mustPoll()) {
    auto ls = locate(s.buf, s.count, s.type);
    if (!ls.isOk()) return raise(s.comm, ls.status());
    auto lr = locate(r.buf, r.count, r.type);
    if (!lr.isOk()) return raise(r.comm, lr.status());
    if (!ls.value().mem.onGpu() && !lr.value().mem.onGpu()) {
      beforeBlocking();
      return PMPI_Sendrecv(s.buf, s.count, s.type, s.peer, s.tag, r.buf, r.count, r.type, r.peer, r.tag, s.comm, st);
    }
  }
  auto ops = makePair(s, r);
  if (!ops.isOk()) return raise(s.comm, ops.status());
  beforeBlocking();
  return waitPair(*ops.value().first, *ops.value().second, st);
}

int sendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r, MPI_Status* st) {
  if (int rc = checks::sendrecvReplace(s, r); rc != MPI_SUCCESS) return rc;
  beforeBlocking();
  const CommInfo* c;
  bool engine = routeOf(s.comm, s.peer, &c) != Route::kReal || routeOf(r.comm, r.peer, &c) != Route::kReal;
  auto loc = locate(s.buf, s.count, s.type);
  if (!loc.isOk()) return raise(s.comm, loc.status());
  if (!engine && !mustPoll() && !loc.value().mem.onGpu())
    return PMPI_Sendrecv_replace(r.buf, r.count, r.type, s.peer, s.tag, r.peer, r.tag, s.comm, st);
  auto ops = makeReplace(s, r, loc.value().mem);
  if (!ops.isOk()) return raise(s.comm, ops.status());
  return waitPair(*ops.value().recv, *ops.value().send, st);
}

#if MPI_VERSION >= 4
// Both halves are always cgdr's operations, even where the real MPI would carry both: MPICH
// 4.0's own MPI_Isendrecv crashes or hangs where a peer is MPI_PROC_NULL (halo exchanges at the
// edge). For the same reason its checks are the blocking call's, and a null request is cgdr's
// MPI_ERR_ARG.
int isendrecv(const base::SendArgs& s, const base::RecvArgs& r, MPI_Request* q) {
  if (!q) return raise(s.comm, Status(base::Errc::kArgument, "MPI_Isendrecv: the request is a null pointer"));
  if (int rc = checks::sendrecv(s, r); rc != MPI_SUCCESS) return rc;
  auto ops = makePair(s, r);
  if (!ops.isOk()) return raise(s.comm, ops.status());
  auto& [recvOp, sendOp] = ops.value();
  *q = handles::add(
      std::make_unique<PairOp<std::monostate>>(std::move(recvOp), std::move(sendOp), std::monostate{}, s.comm));
  return MPI_SUCCESS;
}

int isendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r, MPI_Request* q) {
  if (!q)
    return raise(s.comm, Status(base::Errc::kArgument, "MPI_Isendrecv_replace: the request is a null pointer"));
  if (int rc = checks::sendrecvReplace(s, r); rc != MPI_SUCCESS) return rc;
  auto loc = locate(s.buf, s.count, s.type);
  if (!loc.isOk()) return raise(s.comm, loc.status());
  auto ops = makeReplace(s, r, loc.value().mem);
  if (!ops.isOk()) return raise(s.comm, ops.status());
  ReplaceOps& o = ops.value();
  *q = handles::add(std::make_unique<PairOp<ReplaceCopy>>(std::move(o.recv), std::move(o.send), std::move(o.copy), s.comm));
  return MPI_SUCCESS;
}
#endif

}  // namespace cgdr::engine
