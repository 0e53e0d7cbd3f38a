// Persistent point-to-point requests and MPI_Start/MPI_Startall.
#include <mpi.h>

#include "engine/persistent.hpp"
#include "interpose/guard.hpp"

using cgdr::base::SendMode;

CGDR_API int MPI_Send_init(const void* buf, int count, MPI_Datatype t, int dest, int tag,
                           MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Send_init(buf, count, t, dest, tag, c, r));
  return cgdr::engine::sendInit({buf, count, t, dest, tag, c, SendMode::kStandard}, r);
}

CGDR_API int MPI_Ssend_init(const void* buf, int count, MPI_Datatype t, int dest, int tag,
                            MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Ssend_init(buf, count, t, dest, tag, c, r));
  return cgdr::engine::sendInit({buf, count, t, dest, tag, c, SendMode::kSync}, r);
}

CGDR_API int MPI_Rsend_init(const void* buf, int count, MPI_Datatype t, int dest, int tag,
                            MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Rsend_init(buf, count, t, dest, tag, c, r));
  return cgdr::engine::sendInit({buf, count, t, dest, tag, c, SendMode::kReady}, r);
}

CGDR_API int MPI_Bsend_init(const void* buf, int count, MPI_Datatype t, int dest, int tag,
                            MPI_Comm c, MPI_Request* r) {
  CGDR_ENTER(PMPI_Bsend_init(buf, count, t, dest, tag, c, r));
  return cgdr::engine::sendInit({buf, count, t, dest, tag, c, SendMode::kBuffered}, r);
}

CGDR_API int MPI_Recv_init(void* buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm c,
                           MPI_Request* r) {
  CGDR_ENTER(PMPI_Recv_init(buf, count, t, src, tag, c, r));
  return cgdr::engine::recvInit({buf, count, t, src, tag, c}, r);
}

CGDR_API int MPI_Start(MPI_Request* r) {
  CGDR_ENTER(PMPI_Start(r));
  return cgdr::engine::start(r);
}

CGDR_API int MPI_Startall(int n, MPI_Request rs[]) {
  CGDR_ENTER(PMPI_Startall(n, rs));
  return cgdr::engine::startall(n, rs);
}
