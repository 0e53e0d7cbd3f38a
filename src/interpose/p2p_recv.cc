// MPI receive calls, matched receives and the combined send-receive calls (MPI_Isendrecv and
// MPI_Isendrecv_replace where the MPI has them: MPI-4).
#include <mpi.h>

#include "engine/p2p.hpp"
#include "interpose/guard.hpp"

using cgdr::base::RecvArgs;
using cgdr::base::SendArgs;

CGDR_API int MPI_Recv(void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c,
                      MPI_Status* st) {
  CGDR_ENTER(PMPI_Recv(buf, count, t, src, tag, c, st));
  return cgdr::engine::recv({buf, count, t, src, tag, c}, st);
}

CGDR_API int MPI_Irecv(void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c,
                       MPI_Request* r) {
  CGDR_ENTER(PMPI_Irecv(buf, count, t, src, tag, c, r));
  return cgdr::engine::irecv({buf, count, t, src, tag, c}, r);
}

CGDR_API int MPI_Mrecv(void* buf, int count, MPI_Datatype t, MPI_Message* m, MPI_Status* st) {
  CGDR_ENTER(PMPI_Mrecv(buf, count, t, m, st));
  return cgdr::engine::mrecv({buf, count, t, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD}, m, st);
}

CGDR_API int MPI_Imrecv(void* buf, int count, MPI_Datatype t, MPI_Message* m, MPI_Request* r) {
  CGDR_ENTER(PMPI_Imrecv(buf, count, t, m, r));
  return cgdr::engine::imrecv({buf, count, t, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD}, m, r);
}

CGDR_API int MPI_Sendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag,
                          void* rbuf, int rcount, MPI_Datatype rtype, int src, int rtag,
                          MPI_Comm c, MPI_Status* st) {
  CGDR_ENTER(PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, c, st));
  return cgdr::engine::sendrecv({sbuf, scount, stype, dest, stag, c},
                                {rbuf, rcount, rtype, src, rtag, c}, st);
}

CGDR_API int MPI_Sendrecv_replace(void* buf, int count, MPI_Datatype t, int dest, int stag,
                                  int src, int rtag, MPI_Comm c, MPI_Status* st) {
  CGDR_ENTER(PMPI_Sendrecv_replace(buf, count, t, dest, stag, src, rtag, c, st));
  return cgdr::engine::sendrecvReplace({buf, count, t, dest, stag, c},
                                       {buf, count, t, src, rtag, c}, st);
}

#if MPI_VERSION >= 4
CGDR_API int MPI_Isendrecv(const void* sbuf, int scount, MPI_Datatype stype, int dest, int stag, void* rbuf,
                           int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Isendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, c, r));
  return cgdr::engine::isendrecv({sbuf, scount, stype, dest, stag, c}, {rbuf, rcount, rtype, src, rtag, c}, r);
}

CGDR_API int MPI_Isendrecv_replace(void* buf, int count, MPI_Datatype t, int dest, int stag, int src, int rtag,
                                   MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Isendrecv_replace(buf, count, t, dest, stag, src, rtag, c, r));
  return cgdr::engine::isendrecvReplace({buf, count, t, dest, stag, c}, {buf, count, t, src, rtag, c}, r);
}
#endif
