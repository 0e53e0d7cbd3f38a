#include "engine/checks.hpp"

#include <string>

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

// A peer value that names no rank and that the call may pass: MPI_PROC_NULL, or MPI_ANY_SOURCE for a receive.
bool specialPeer(int peer, bool receive) { return peer == MPI_PROC_NULL || (receive && peer == MPI_ANY_SOURCE); }

// Whether `peer` can be a send's destination or a receive's source on `c`: a special value, or a
// rank below the communicator's size (the remote group's for an intercommunicator). A
// communicator cgdr does not know is asked (not MPI_COMM_NULL, which the MPI itself refuses).
bool peerInRange(MPI_Comm c, int peer, bool receive) {
  if (specialPeer(peer, receive)) return true;
  if (peer < 0) return false;
  if (const CommInfo* info = comms::find(c)) return peer < info->size;
  if (c == MPI_COMM_NULL) return true;
  int inter = 0, n = 0;
  PMPI_Comm_test_inter(c, &inter);
  if (inter) PMPI_Comm_remote_size(c, &n);
  else PMPI_Comm_size(c, &n);
  return peer < n;
}

// A peer a persistent init may name on a communicator cgdr knows (others are always checked).
bool peerOk(MPI_Comm c, int peer, bool receive) {
  const CommInfo* info = comms::find(c);
  return info && (specialPeer(peer, receive) || (peer >= 0 && peer < info->size));
}

// The peers a send-receive passes to the MPI for its verdict where one is out of range: the bad
// one kept, a good one replaced by MPI_PROC_NULL (refused before it communicates).
struct Peers {
  bool inRange;
  int dest, source;
};
Peers peersOf(const base::SendArgs& s, const base::RecvArgs& r) {
  const bool destOk = peerInRange(s.comm, s.peer, false), srcOk = peerInRange(r.comm, r.peer, true);
  return {destOk && srcOk, destOk ? MPI_PROC_NULL : s.peer, srcOk ? MPI_PROC_NULL : r.peer};
}

// Every argument of a send or receive looks right: the quick look that lets a call go on
// without asking the MPI.
bool quick(int tag, bool receive, const void* buf, int count, MPI_Datatype t, MPI_Comm c, int peer, Call call,
           const MPI_Request* r) {
  return tagOk(tag, receive) && looksRight(buf, count, t) && (call == Call::kBlocking || r) &&
         (call != Call::kPersistent || peerOk(c, peer, receive));
}

// The real MPI's verdict on the call `put` makes (the caller's call to MPI_PROC_NULL, or an init to
// the named peer), given a request pointer of its own where the caller passed one (null where the
// call has none): a request the accepted call returned is freed, and the datatypes it accepted are
// noted for this thread.
template <class Put>
int verdict(const MPI_Request* r, MPI_Datatype t1, MPI_Datatype t2, Put put) {
  MPI_Request made = MPI_REQUEST_NULL;
  MPI_Request* out = r ? &made : nullptr;
  int rc = put(out);
  if (made != MPI_REQUEST_NULL) PMPI_Request_free(&made);
  if (rc == MPI_SUCCESS) {
    base::noteTypeAccepted(t1);
    base::noteTypeAccepted(t2);
  }
  return rc;
}

}  // namespace

int send(const base::SendArgs& a, Call call, const MPI_Request* r) {
  if (quick(a.tag, false, a.buf, a.count, a.type, a.comm, a.peer, call, r)) return MPI_SUCCESS;
  // A blocking or non-blocking send is put to the MPI in the standard mode (the same checks; a
  // buffered send to MPI_PROC_NULL may want an attached buffer in some MPIs); an init in its own.
  return verdict(r, a.type, MPI_DATATYPE_NULL, [&](MPI_Request* out) {
    if (call == Call::kBlocking) return PMPI_Send(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm);
    if (call == Call::kNonBlocking) return PMPI_Isend(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm, out);
    return base::pmpiSendInit(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, out);
  });
}

int recv(const base::RecvArgs& a, Call call, const MPI_Request* r) {
  if (quick(a.tag, true, a.buf, a.count, a.type, a.comm, a.peer, call, r)) return MPI_SUCCESS;
  return verdict(r, a.type, MPI_DATATYPE_NULL, [&](MPI_Request* out) {
    if (call == Call::kBlocking)
      return PMPI_Recv(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm, MPI_STATUS_IGNORE);
    if (call == Call::kNonBlocking) return PMPI_Irecv(a.buf, a.count, a.type, MPI_PROC_NULL, a.tag, a.comm, out);
    return PMPI_Recv_init(a.buf, a.count, a.type, a.peer, a.tag, a.comm, out);
  });
}

// The MPI's verdict on a peer out of range: the same call to that peer, refused before anything
// moves. Should the MPI accept it (no argument checks), the call is cgdr's error, not a second
// send.
namespace {
template <class Put>
int peerVerdict(MPI_Comm c, int peer, const MPI_Request* r, Put put) {
  int rc = verdict(r, MPI_DATATYPE_NULL, MPI_DATATYPE_NULL, put);
  if (rc != MPI_SUCCESS) return rc;
  return base::raise(c, base::Status(base::Errc::kArgument, "rank " + std::to_string(peer) + " is out of range"));
}
}  // namespace

int sendPeer(const base::SendArgs& a, Call call, const MPI_Request* r) {
  if (peerInRange(a.comm, a.peer, false)) return MPI_SUCCESS;
  return peerVerdict(a.comm, a.peer, r, [&](MPI_Request* out) {
    if (call == Call::kBlocking) return base::pmpiSend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm);
    return base::pmpiIsend(a.mode, a.buf, a.count, a.type, a.peer, a.tag, a.comm, out);
  });
}

int recvPeer(const base::RecvArgs& a, Call call, const MPI_Request* r) {
  if (peerInRange(a.comm, a.peer, true)) return MPI_SUCCESS;
  return peerVerdict(a.comm, a.peer, r, [&](MPI_Request* out) {
    if (call == Call::kBlocking) return PMPI_Recv(a.buf, a.count, a.type, a.peer, a.tag, a.comm, MPI_STATUS_IGNORE);
    return PMPI_Irecv(a.buf, a.count, a.type, a.peer, a.tag, a.comm, out);
  });
}

// A send-receive names two peers, and the MPI refuses the whole call where either is out of range,
// before anything moves. cgdr posts its two halves apart, so it checks the ranks first: a
// receive posted beside a refused send would wait for ever (and a send beside a refused receive
// would deliver a message the MPI never sends). The verdict is the MPI's own call (peersOf).
int sendrecv(const base::SendArgs& s, const base::RecvArgs& r) {
  if (const Peers p = peersOf(s, r); !p.inRange)
    return PMPI_Sendrecv(s.buf, s.count, s.type, p.dest, s.tag, r.buf, r.count, r.type, p.source, r.tag, s.comm,
                         MPI_STATUS_IGNORE);
  if (tagOk(s.tag, false) && tagOk(r.tag, true) && looksRight(s.buf, s.count, s.type) &&
      looksRight(r.buf, r.count, r.type))
    return MPI_SUCCESS;
  return verdict(nullptr, s.type, r.type, [&](MPI_Request*) {
    return PMPI_Sendrecv(s.buf, s.count, s.type, MPI_PROC_NULL, s.tag, r.buf, r.count, r.type, MPI_PROC_NULL, r.tag,
                         s.comm, MPI_STATUS_IGNORE);
  });
}

int sendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r) {
  if (const Peers p = peersOf(s, r); !p.inRange)
    return PMPI_Sendrecv_replace(r.buf, r.count, r.type, p.dest, s.tag, p.source, r.tag, s.comm, MPI_STATUS_IGNORE);
  if (tagOk(s.tag, false) && tagOk(r.tag, true) && looksRight(s.buf, s.count, s.type)) return MPI_SUCCESS;
  return verdict(nullptr, s.type, MPI_DATATYPE_NULL, [&](MPI_Request*) {
    return PMPI_Sendrecv_replace(r.buf, r.count, r.type, MPI_PROC_NULL, s.tag, MPI_PROC_NULL, r.tag, s.comm,
                                 MPI_STATUS_IGNORE);
  });
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
  return verdict(r, a.type, MPI_DATATYPE_NULL, [&](MPI_Request* out) {
    return call == Call::kBlocking ? PMPI_Recv(a.buf, a.count, a.type, MPI_PROC_NULL, 0, a.comm, MPI_STATUS_IGNORE)
                                   : PMPI_Irecv(a.buf, a.count, a.type, MPI_PROC_NULL, 0, a.comm, out);
  });
}

}  // namespace cgdr::engine::checks
