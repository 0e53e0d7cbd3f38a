// MPI send calls (all modes, blocking and non-blocking).
#include <mpi.h>

#include "engine/p2p.hpp"
#include "interpose/guard.hpp"

using cgdr::base::SendArgs;
using cgdr::base::SendMode;

CGDR_API int MPI_Send(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Send(buf, count, t, dest, tag, c));
  return cgdr::engine::send({buf, count, t, dest, tag, c, SendMode::kStandard});
}

CGDR_API int MPI_Ssend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Ssend(buf, count, t, dest, tag, c));
  return cgdr::engine::send({buf, count, t, dest, tag, c, SendMode::kSync});
}

CGDR_API int MPI_Rsend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Rsend(buf, count, t, dest, tag, c));
  return cgdr::engine::send({buf, count, t, dest, tag, c, SendMode::kReady});
}

CGDR_API int MPI_Bsend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
  CGDR_ENTER(PMPI_Bsend(buf, count, t, dest, tag, c));
  return cgdr::engine::send({buf, count, t, dest, tag, c, SendMode::kBuffered});
}

CGDR_API int MPI_Isend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                       MPI_Request* r) {
  CGDR_ENTER(PMPI_Isend(buf, count, t, dest, tag, c, r));
  return cgdr::engine::isend({buf, count, t, dest, tag, c, SendMode::kStandard}, r);
}

CGDR_API int MPI_Issend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                        MPI_Request* r) {
  CGDR_ENTER(PMPI_Issend(buf, count, t, dest, tag, c, r));
  return cgdr::engine::isend({buf, count, t, dest, tag, c, SendMode::kSync}, r);
}

CGDR_API int MPI_Irsend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                        MPI_Request* r) {
  CGDR_ENTER(PMPI_Irsend(buf, count, t, dest, tag, c, r));
  return cgdr::engine::isend({buf, count, t, dest, tag, c, SendMode::kReady}, r);
}

CGDR_API int MPI_Ibsend(const void* buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm c,
                        MPI_Request* r) {
  CGDR_ENTER(PMPI_Ibsend(buf, count, t, dest, tag, c, r));
  return cgdr::engine::isend({buf, count, t, dest, tag, c, SendMode::kBuffered}, r);
}
