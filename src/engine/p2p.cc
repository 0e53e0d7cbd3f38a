#include "engine/p2p.hpp"

#include "base/cuda.hpp"
#include "base/dtype.hpp"
#include "channel/net/net_recv.hpp"
#include "channel/net/net_send.hpp"
#include "channel/net/send_order.hpp"
#include "base/errors.hpp"
#include "engine/handles.hpp"
#include "engine/progress.hpp"
#include "engine/real_op.hpp"
#include "mem/classify.hpp"

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

}  // namespace

void copyStatus(MPI_Status* dst, const MPI_Status& src) {
  if (dst == MPI_STATUS_IGNORE) return;
  int keep = dst->MPI_ERROR;
  *dst = src;
  dst->MPI_ERROR = keep;
}

Result<std::unique_ptr<base::Op>> makeSend(const base::SendArgs& a) {
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

int isend(const base::SendArgs& a, MPI_Request* r) {
  if (a.peer == MPI_PROC_NULL)
    return base::pmpiIsend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, r);
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
  if (a.peer == MPI_PROC_NULL)
    return base::pmpiSend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm);
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu()) {
    beforeBlocking();
    return base::pmpiSend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm);
  }
  auto s = net::NetSend::create(a, loc.value().mem, loc.value().span);
  if (!s.isOk()) return raise(a.comm, s.status());
  net::send_order::flush(a.comm, a.peer);
  waitFor(*s.value());
  return finishBlocking(*s.value(), MPI_STATUS_IGNORE);
}

int irecv(const base::RecvArgs& a, MPI_Request* r) {
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu() || a.peer == MPI_PROC_NULL)
    return PMPI_Irecv(a.buf, a.count, a.type, a.peer, a.tag, a.comm, r);
  auto op = net::NetRecv::create(a, loc.value().mem, loc.value().span, nullptr);
  if (!op.isOk()) return raise(a.comm, op.status());
  *r = handles::add(std::move(op.value()));
  return MPI_SUCCESS;
}

int recv(const base::RecvArgs& a, MPI_Status* st) {
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu() || a.peer == MPI_PROC_NULL) {
    beforeBlocking();
    return PMPI_Recv(a.buf, a.count, a.type, a.peer, a.tag, a.comm, st);
  }
  auto op = net::NetRecv::create(a, loc.value().mem, loc.value().span, nullptr);
  if (!op.isOk()) return raise(a.comm, op.status());
  beforeBlocking();
  waitFor(*op.value());
  return finishBlocking(*op.value(), st);
}

int imrecv(const base::RecvArgs& a, MPI_Message* m, MPI_Request* r) {
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu() || *m == MPI_MESSAGE_NO_PROC)
    return PMPI_Imrecv(a.buf, a.count, a.type, m, r);
  auto op = net::NetRecv::create(a, loc.value().mem, loc.value().span, m);
  if (!op.isOk()) return raise(a.comm, op.status());
  *r = handles::add(std::move(op.value()));
  return MPI_SUCCESS;
}

int mrecv(const base::RecvArgs& a, MPI_Message* m, MPI_Status* st) {
  auto loc = locate(a.buf, a.count, a.type);
  if (!loc.isOk()) return raise(a.comm, loc.status());
  if (!loc.value().mem.onGpu() || *m == MPI_MESSAGE_NO_PROC) {
    beforeBlocking();
    return PMPI_Mrecv(a.buf, a.count, a.type, m, st);
  }
  auto op = net::NetRecv::create(a, loc.value().mem, loc.value().span, m);
  if (!op.isOk()) return raise(a.comm, op.status());
  beforeBlocking();
  waitFor(*op.value());
  return finishBlocking(*op.value(), st);
}

int sendrecv(const base::SendArgs& s, const base::RecvArgs& r, MPI_Status* st) {
  auto ls = locate(s.buf, s.count, s.type);
  if (!ls.isOk()) return raise(s.comm, ls.status());
  auto lr = locate(r.buf, r.count, r.type);
  if (!lr.isOk()) return raise(r.comm, lr.status());
  if (!ls.value().mem.onGpu() && !lr.value().mem.onGpu()) {
    beforeBlocking();
    return PMPI_Sendrecv(s.buf, s.count, s.type, s.peer, s.tag, r.buf, r.count, r.type, r.peer,
                         r.tag, s.comm, st);
  }
  auto recvOp = makeRecv(r);
  if (!recvOp.isOk()) return raise(r.comm, recvOp.status());
  auto sendOp = makeSend(s);
  if (!sendOp.isOk()) {
    (void)recvOp.value()->cancel();
    waitFor(*recvOp.value());
    return raise(s.comm, sendOp.status());
  }
  beforeBlocking();
  waitFor(*sendOp.value());
  waitFor(*recvOp.value());
  int rcSend = finishBlocking(*sendOp.value(), MPI_STATUS_IGNORE);
  int rcRecv = finishBlocking(*recvOp.value(), st);
  return rcRecv != MPI_SUCCESS ? rcRecv : rcSend;
}

int sendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r, MPI_Status* st) {
  auto loc = locate(s.buf, s.count, s.type);
  if (!loc.isOk()) return raise(s.comm, loc.status());
  beforeBlocking();
  if (!loc.value().mem.onGpu())
    return PMPI_Sendrecv_replace(r.buf, r.count, r.type, s.peer, s.tag, r.peer, r.tag, s.comm, st);
  const mem::MemInfo& m = loc.value().mem;
  auto staged = net::StagedSpan::make(s.buf, loc.value().span, m.device);
  if (!staged.isOk()) return raise(s.comm, staged.status());
  net::StagedSpan& h = staged.value();
  Status cs = mem::copySync(h.hostStart(), h.gpuStart(), h.span().bytes, m.device,
                            mem::CopyDir::kToHost);
  if (!cs.isOk()) return raise(s.comm, cs);
  int rc = PMPI_Sendrecv_replace(h.mpiBuf(), r.count, r.type, s.peer, s.tag, r.peer, r.tag, s.comm,
                                 st);
  cs = mem::copySync(h.gpuStart(), h.hostStart(), h.span().bytes, m.device,
                     mem::CopyDir::kToDevice);
  if (!cs.isOk()) return raise(s.comm, cs);
  return rc;
}

}  // namespace cgdr::engine
