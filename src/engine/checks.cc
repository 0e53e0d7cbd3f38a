#include "engine/checks.hpp"

#include "base/dtype.hpp"
#include "base/errors.hpp"
#include "engine/comm_table.hpp"

namespace cgdr::engine::checks {
namespace {

int tagUb() {
  static const int ub = [] {
    int* v = nullptr;
    int flag = 0;
    PMPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
    return flag && v ? *v : 32767;  // the least MPI allows
  }();
  return ub;
}

bool tagOk(int tag, bool receive) { return tag >= 0 ? tag <= tagUb() : receive && tag == MPI_ANY_TAG; }

// Every argument looks right and the datatype was accepted on this thread before.
bool looksRight(const void* buf, int count, MPI_Datatype t) {
  return count >= 0 && (buf != nullptr || count == 0) && base::typeAccepted(t);
}

// A peer a persistent init may name on a communicator cgdr knows (others are always checked).
bool peerOk(MPI_Comm c, int peer, bool receive) {
  const CommInfo* info = comms::find(c);
  if (!info) return false;
  return peer == MPI_PROC_NULL || (receive && peer == MPI_ANY_SOURCE) || (peer >= 0 && peer < info->size);
}

// The real MPI's verdict on a probe call; `made` is a request the accepted call returned.
int verdict(int rc, MPI_Request* made, MPI_Datatype t1, MPI_Datatype t2 = MPI_DATATYPE_NULL) {
  if (made && *made != MPI_REQUEST_NULL) PMPI_Request_free(made);
  if (rc == MPI_SUCCESS) {
    base::noteTypeAccepted(t1);
    base::noteTypeAccepted(t2);
  }
  return rc;
}

int pmpiSendInit(base::SendMode m, const void* buf, int count, MPI_Datatype t, int peer, int tag, MPI_Comm c,
                 MPI_Request* r) {
  switch (m) {
    case base::SendMode::kSync: return PMPI_Ssend_init(buf, count, t, peer, tag, c, r);
    case base::SendMode::kReady: return PMPI_Rsend_init(buf, count, t, peer, tag, c, r);
    case base::SendMode::kBuffered: return PMPI_Bsend_init(buf, count, t, peer, tag, c, r);
    case base::SendMode::kStandard: break;
  }
  return PMPI_Send_init(buf, count, t, peer, tag, c, r);
}

}  // namespace

int send(const base::SendArgs& a, Call call, const MPI_Request* r) {
  bool persistent = call == Call::kPersistent;
  if (tagOk(a.tag, false) && looksRight(a.buf, a.count, a.type) && (call == Call::kBlocking || r) &&
      (!persistent || peerOk(a.comm, a.peer, false)))
    return MPI_SUCCESS;
  MPI_Request made = MPI_REQUEST_NULL;
  MPI_Request* out = r ? &made : nullptr;
  // A blocking or non-blocking send is put to the MPI in the standard mode (the same checks; a
  // buffered send to MPI_PROC_NULL may want an attached buffer in some MPIs); an init in its own.
  int rc;
  if (call == Call::kBlocking)
    rc = PMPI_Send(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm);
  else if (call == Call::kNonBlocking)
    rc = PMPI_Isend(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm, out);
  else
    rc = pmpiSendInit(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, out);
  return verdict(rc, out, a.type);
}

int recv(const base::RecvArgs& a, Call call, const MPI_Request* r) {
  bool persistent = call == Call::kPersistent;
  if (tagOk(a.tag, true) && looksRight(a.buf, a.count, a.type) && (call == Call::kBlocking || r) &&
      (!persistent || peerOk(a.comm, a.peer, true)))
    return MPI_SUCCESS;
  MPI_Request made = MPI_REQUEST_NULL;
  MPI_Request* out = r ? &made : nullptr;
  int rc;
  if (call == Call::kBlocking)
    rc = PMPI_Recv(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm, MPI_STATUS_IGNORE);
  else if (call == Call::kNonBlocking)
    rc = PMPI_Irecv(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm, out);
  else
    rc = PMPI_Recv_init(a.buf, a.count, a.type, a.peer, a.tag, a.comm, out);
  return verdict(rc, out, a.type);
}

int sendrecv(const base::SendArgs& s, const base::RecvArgs& r) {
  if (tagOk(s.tag, false) && tagOk(r.tag, true) && looksRight(s.buf, s.count, s.type) &&
      looksRight(r.buf, r.count, r.type))
    return MPI_SUCCESS;
  int rc = PMPI_Sendrecv(s.buf, s.count, s.type, MPI_PROC_NULL, s.tag, r.buf, r.count, r.type, MPI_PROC_NULL, r.tag,
                         s.comm, MPI_STATUS_IGNORE);
  return verdict(rc, nullptr, s.type, r.type);
}

int sendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r) {
  if (tagOk(s.tag, false) && tagOk(r.tag, true) && looksRight(s.buf, s.count, s.type)) return MPI_SUCCESS;
  int rc = PMPI_Sendrecv_replace(r.buf, r.count, r.type, MPI_PROC_NULL, s.tag, MPI_PROC_NULL, r.tag, s.comm,
                                 MPI_STATUS_IGNORE);
  return verdict(rc, nullptr, s.type);
}

int probe(int tag, MPI_Comm c, bool blocking, const int* flag, const MPI_Message* m, bool matched) {
  if (!blocking && !flag)
    return base::raise(c, base::Status(base::Errc::kArgument, matched ? "MPI_Improbe: the flag is a null pointer"
                                                                       : "MPI_Iprobe: the flag is a null pointer"));
  if (tagOk(tag, true) && (!matched || m)) return MPI_SUCCESS;
  int f = 0;
  MPI_Message got = MPI_MESSAGE_NULL;
  MPI_Message* out = m ? &got : nullptr;
  if (!matched) return blocking ? PMPI_Probe(MPI_PROC_NULL, tag, c, MPI_STATUS_IGNORE)
                                : PMPI_Iprobe(MPI_PROC_NULL, tag, c, &f, MPI_STATUS_IGNORE);
  return blocking ? PMPI_Mprobe(MPI_PROC_NULL, tag, c, out, MPI_STATUS_IGNORE)
                  : PMPI_Improbe(MPI_PROC_NULL, tag, c, &f, out, MPI_STATUS_IGNORE);
}

int matchedRecv(const base::RecvArgs& a, Call call, const MPI_Request* r) {
  if (looksRight(a.buf, a.count, a.type) && (call == Call::kBlocking || r)) return MPI_SUCCESS;
  MPI_Request made = MPI_REQUEST_NULL;
  MPI_Request* out = r ? &made : nullptr;
  int rc = call == Call::kBlocking
               ? PMPI_Recv(a.buf, a.count, a.type, MPI_PROC_NULL, 0, a.comm, MPI_STATUS_IGNORE)
               : PMPI_Irecv(a.buf, a.count, a.type, MPI_PROC_NULL, 0, a.comm, out);
  return verdict(rc, out, a.type);
}

}  // namespace cgdr::engine::checks
