// The large-count point-to-point calls of MPI-4 (MPI_Send_c ... MPI_Recv_init_c), where the MPI
// has them (MPICH 4; Open MPI 4.1 has none). Without them a program calling them would send
// through the real MPI while its co-located peer's receive waits in cgdr's engine, and the real
// MPI would be handed GPU pointers. A count that fits an int takes the int call's path; a larger
// one becomes one element of a contiguous type of that many elements, made for the call and freed
// with it (with its request where there is one).
#include <mpi.h>

#if MPI_VERSION >= 4
#include <climits>
#include <string>

#include "base/errors.hpp"
#include "engine/handles.hpp"
#include "engine/p2p.hpp"
#include "engine/persistent.hpp"
#include "interpose/guard.hpp"

using cgdr::base::RecvArgs;
using cgdr::base::SendArgs;
using cgdr::base::SendMode;
namespace engine = cgdr::engine;

namespace {

// Whether `t` is one contiguous block of data (no holes, no gaps between elements).
bool contiguous(MPI_Datatype t) {
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  if (PMPI_Type_size_c(t, &size) != MPI_SUCCESS || PMPI_Type_get_extent_c(t, &lb, &extent) != MPI_SUCCESS ||
      PMPI_Type_get_true_extent_c(t, &tlb, &textent) != MPI_SUCCESS)
    return false;
  return extent == size && textent == size;
}

// A count of a large-count call as the engine takes it.
class Count {
 public:
  // `check` makes the caller's call to MPI_PROC_NULL: the real MPI's verdict on the arguments
  // where the count is above INT_MAX (cgdr's own checks look at int counts).
  template <class Check>
  Count(MPI_Count n, MPI_Datatype t, MPI_Comm c, const char* call, Check check) : type_(t) {
    if (n <= INT_MAX) {
      n_ = n < 0 ? -1 : static_cast<int>(n);  // a negative count is refused on the int path
      return;
    }
    if ((rc_ = check()) != MPI_SUCCESS) return;
    if (!contiguous(t)) {
      rc_ = cgdr::base::raise(c, cgdr::base::Status(cgdr::base::Errc::kUnsupported,
                                                    std::string(call) +
                                                        ": a count above INT_MAX of a non-contiguous datatype"));
      return;
    }
    // Where the MPI cannot make the type it has raised its error already; that error is returned.
    if ((rc_ = PMPI_Type_contiguous_c(n, t, &made_)) != MPI_SUCCESS) return;
    if ((rc_ = PMPI_Type_commit(&made_)) != MPI_SUCCESS) return;
    n_ = 1;
    type_ = made_;
  }
  ~Count() {
    if (made_ != MPI_DATATYPE_NULL) cgdr::base::freeDatatype(&made_);
  }
  Count(const Count&) = delete;
  Count& operator=(const Count&) = delete;

  bool failed() const { return rc_ != MPI_SUCCESS; }
  int rc() const { return rc_; }
  int n() const { return n_; }
  MPI_Datatype type() const { return type_; }
  // After a call that returned `rc` and, on success, set `*r`: cgdr's operation behind the request
  // takes the made type (freed with it); a request of the real MPI holds its own reference to it.
  int keepWith(int rc, const MPI_Request* r) {
    if (rc != MPI_SUCCESS || made_ == MPI_DATATYPE_NULL) return rc;
    if (cgdr::base::Op* op = engine::handles::find(*r)) {
      op->own(made_);
      made_ = MPI_DATATYPE_NULL;
    }
    return rc;
  }

 private:
  int n_ = 0;
  MPI_Datatype type_;
  MPI_Datatype made_ = MPI_DATATYPE_NULL;
  int rc_ = MPI_SUCCESS;
};

// A send's count, judged where above INT_MAX as MPI_Send_c to MPI_PROC_NULL (every mode's checks).
Count sendCount(const void* buf, MPI_Count n, MPI_Datatype t, int tag, MPI_Comm c, const char* call) {
  return Count(n, t, c, call, [&] { return PMPI_Send_c(buf, n, t, MPI_PROC_NULL, tag, c); });
}

int send(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c, SendMode m, const char* call) {
  Count k = sendCount(buf, n, t, tag, c, call);
  if (k.failed()) return k.rc();
  return engine::send({buf, k.n(), k.type(), dest, tag, c, m});
}

int isend(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c, SendMode m, MPI_Request* r,
          const char* call) {
  Count k = sendCount(buf, n, t, tag, c, call);
  if (k.failed()) return k.rc();
  int rc = engine::isend({buf, k.n(), k.type(), dest, tag, c, m}, r);
  return k.keepWith(rc, r);
}

int sendInit(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c, SendMode m,
             MPI_Request* r, const char* call) {
  Count k = sendCount(buf, n, t, tag, c, call);
  if (k.failed()) return k.rc();
  int rc = engine::sendInit({buf, k.n(), k.type(), dest, tag, c, m}, r);
  return k.keepWith(rc, r);
}

// A receive's count, judged where above INT_MAX as MPI_Recv_c from MPI_PROC_NULL. The matched
// receives pass MPI_COMM_SELF: the message's communicator is not known here.
Count recvCount(void* buf, MPI_Count n, MPI_Datatype t, int tag, MPI_Comm c, const char* call) {
  return Count(n, t, c, call, [&] { return PMPI_Recv_c(buf, n, t, MPI_PROC_NULL, tag, c, MPI_STATUS_IGNORE); });
}

}  // namespace

CGDR_API int MPI_Send_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Send_c(buf, n, t, dest, tag, c));
  return send(buf, n, t, dest, tag, c, SendMode::kStandard, "MPI_Send_c");
}

CGDR_API int MPI_Ssend_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Ssend_c(buf, n, t, dest, tag, c));
  return send(buf, n, t, dest, tag, c, SendMode::kSync, "MPI_Ssend_c");
}

CGDR_API int MPI_Rsend_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Rsend_c(buf, n, t, dest, tag, c));
  return send(buf, n, t, dest, tag, c, SendMode::kReady, "MPI_Rsend_c");
}

CGDR_API int MPI_Bsend_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Bsend_c(buf, n, t, dest, tag, c));
  return send(buf, n, t, dest, tag, c, SendMode::kBuffered, "MPI_Bsend_c");
}

CGDR_API int MPI_Isend_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                         MPI_Request* r) {
  CGDR_ENTER(PMPI_Isend_c(buf, n, t, dest, tag, c, r));
  return isend(buf, n, t, dest, tag, c, SendMode::kStandard, r, "MPI_Isend_c");
}

CGDR_API int MPI_Issend_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                          MPI_Request* r) {
  CGDR_ENTER(PMPI_Issend_c(buf, n, t, dest, tag, c, r));
  return isend(buf, n, t, dest, tag, c, SendMode::kSync, r, "MPI_Issend_c");
}

CGDR_API int MPI_Irsend_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                          MPI_Request* r) {
  CGDR_ENTER(PMPI_Irsend_c(buf, n, t, dest, tag, c, r));
  return isend(buf, n, t, dest, tag, c, SendMode::kReady, r, "MPI_Irsend_c");
}

CGDR_API int MPI_Ibsend_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                          MPI_Request* r) {
  CGDR_ENTER(PMPI_Ibsend_c(buf, n, t, dest, tag, c, r));
  return isend(buf, n, t, dest, tag, c, SendMode::kBuffered, r, "MPI_Ibsend_c");
}

CGDR_API int MPI_Send_init_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                             MPI_Request* r) {
  CGDR_ENTER(PMPI_Send_init_c(buf, n, t, dest, tag, c, r));
  return sendInit(buf, n, t, dest, tag, c, SendMode::kStandard, r, "MPI_Send_init_c");
}

CGDR_API int MPI_Ssend_init_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                              MPI_Request* r) {
  CGDR_ENTER(PMPI_Ssend_init_c(buf, n, t, dest, tag, c, r));
  return sendInit(buf, n, t, dest, tag, c, SendMode::kSync, r, "MPI_Ssend_init_c");
}

CGDR_API int MPI_Rsend_init_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                              MPI_Request* r) {
  CGDR_ENTER(PMPI_Rsend_init_c(buf, n, t, dest, tag, c, r));
  return sendInit(buf, n, t, dest, tag, c, SendMode::kReady, r, "MPI_Rsend_init_c");
}

CGDR_API int MPI_Bsend_init_c(const void* buf, MPI_Count n, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                              MPI_Request* r) {
  CGDR_ENTER(PMPI_Bsend_init_c(buf, n, t, dest, tag, c, r));
  return sendInit(buf, n, t, dest, tag, c, SendMode::kBuffered, r, "MPI_Bsend_init_c");
}

CGDR_API int MPI_Recv_c(void* buf, MPI_Count n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status* st) {
  CGDR_ENTER(PMPI_Recv_c(buf, n, t, src, tag, c, st));
  Count k = recvCount(buf, n, t, tag, c, "MPI_Recv_c");
  if (k.failed()) return k.rc();
  return engine::recv({buf, k.n(), k.type(), src, tag, c}, st);
}

CGDR_API int MPI_Irecv_c(void* buf, MPI_Count n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Irecv_c(buf, n, t, src, tag, c, r));
  Count k = recvCount(buf, n, t, tag, c, "MPI_Irecv_c");
  if (k.failed()) return k.rc();
  int rc = engine::irecv({buf, k.n(), k.type(), src, tag, c}, r);
  return k.keepWith(rc, r);
}

CGDR_API int MPI_Recv_init_c(void* buf, MPI_Count n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Recv_init_c(buf, n, t, src, tag, c, r));
  Count k = recvCount(buf, n, t, tag, c, "MPI_Recv_init_c");
  if (k.failed()) return k.rc();
  int rc = engine::recvInit({buf, k.n(), k.type(), src, tag, c}, r);
  return k.keepWith(rc, r);
}

CGDR_API int MPI_Mrecv_c(void* buf, MPI_Count n, MPI_Datatype t, MPI_Message* m, MPI_Status* st) {
  CGDR_ENTER(PMPI_Mrecv_c(buf, n, t, m, st));
  Count k = recvCount(buf, n, t, 0, MPI_COMM_SELF, "MPI_Mrecv_c");
  if (k.failed()) return k.rc();
  return engine::mrecv({buf, k.n(), k.type(), MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD}, m, st);
}

CGDR_API int MPI_Imrecv_c(void* buf, MPI_Count n, MPI_Datatype t, MPI_Message* m, MPI_Request* r) {
  CGDR_ENTER(PMPI_Imrecv_c(buf, n, t, m, r));
  Count k = recvCount(buf, n, t, 0, MPI_COMM_SELF, "MPI_Imrecv_c");
  if (k.failed()) return k.rc();
  int rc = engine::imrecv({buf, k.n(), k.type(), MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD}, m, r);
  return k.keepWith(rc, r);
}

CGDR_API int MPI_Sendrecv_c(const void* sbuf, MPI_Count sn, MPI_Datatype stype, int dest, int stag, void* rbuf,
                            MPI_Count rn, MPI_Datatype rtype, int src, int rtag, MPI_Comm c, MPI_Status* st) {
  CGDR_ENTER(PMPI_Sendrecv_c(sbuf, sn, stype, dest, stag, rbuf, rn, rtype, src, rtag, c, st));
  auto check = [&] {
    return PMPI_Sendrecv_c(sbuf, sn, stype, MPI_PROC_NULL, stag, rbuf, rn, rtype, MPI_PROC_NULL, rtag, c,
                           MPI_STATUS_IGNORE);
  };
  Count ks(sn, stype, c, "MPI_Sendrecv_c", check);
  if (ks.failed()) return ks.rc();
  Count kr(rn, rtype, c, "MPI_Sendrecv_c", check);
  if (kr.failed()) return kr.rc();
  return engine::sendrecv({sbuf, ks.n(), ks.type(), dest, stag, c}, {rbuf, kr.n(), kr.type(), src, rtag, c}, st);
}

CGDR_API int MPI_Sendrecv_replace_c(void* buf, MPI_Count n, MPI_Datatype t, int dest, int stag, int src, int rtag,
                                    MPI_Comm c, MPI_Status* st) {
  CGDR_ENTER(PMPI_Sendrecv_replace_c(buf, n, t, dest, stag, src, rtag, c, st));
  Count k(n, t, c, "MPI_Sendrecv_replace_c", [&] {
    return PMPI_Sendrecv_replace_c(buf, n, t, MPI_PROC_NULL, stag, MPI_PROC_NULL, rtag, c, MPI_STATUS_IGNORE);
  });
  if (k.failed()) return k.rc();
  return engine::sendrecvReplace({buf, k.n(), k.type(), dest, stag, c}, {buf, k.n(), k.type(), src, rtag, c}, st);
}

CGDR_API int MPI_Isendrecv_c(const void* sbuf, MPI_Count sn, MPI_Datatype stype, int dest, int stag, void* rbuf,
                             MPI_Count rn, MPI_Datatype rtype, int src, int rtag, MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Isendrecv_c(sbuf, sn, stype, dest, stag, rbuf, rn, rtype, src, rtag, c, r));
  auto check = [&] {
    return PMPI_Sendrecv_c(sbuf, sn, stype, MPI_PROC_NULL, stag, rbuf, rn, rtype, MPI_PROC_NULL, rtag, c,
                           MPI_STATUS_IGNORE);
  };
  Count ks(sn, stype, c, "MPI_Isendrecv_c", check);
  if (ks.failed()) return ks.rc();
  Count kr(rn, rtype, c, "MPI_Isendrecv_c", check);
  if (kr.failed()) return kr.rc();
  int rc = engine::isendrecv({sbuf, ks.n(), ks.type(), dest, stag, c}, {rbuf, kr.n(), kr.type(), src, rtag, c}, r);
  rc = ks.keepWith(rc, r);
  return kr.keepWith(rc, r);
}

CGDR_API int MPI_Isendrecv_replace_c(void* buf, MPI_Count n, MPI_Datatype t, int dest, int stag, int src, int rtag,
                                     MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Isendrecv_replace_c(buf, n, t, dest, stag, src, rtag, c, r));
  Count k(n, t, c, "MPI_Isendrecv_replace_c", [&] {
    return PMPI_Sendrecv_replace_c(buf, n, t, MPI_PROC_NULL, stag, MPI_PROC_NULL, rtag, c, MPI_STATUS_IGNORE);
  });
  if (k.failed()) return k.rc();
  int rc = engine::isendrecvReplace({buf, k.n(), k.type(), dest, stag, c}, {buf, k.n(), k.type(), src, rtag, c}, r);
  return k.keepWith(rc, r);
}

#endif  // MPI_VERSION >= 4
