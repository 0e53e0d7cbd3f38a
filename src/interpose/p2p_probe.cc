// Probes: engine messages (co-located senders) and the real MPI's, as the communicator needs.
#include <mpi.h>

#include "engine/p2p.hpp"
#include "interpose/guard.hpp"

CGDR_API int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status* st) {
  CGDR_ENTER(PMPI_Probe(src, tag, c, st));
  return cgdr::engine::probe(src, tag, c, st);
}

CGDR_API int MPI_Iprobe(int src, int tag, MPI_Comm c, int* flag, MPI_Status* st) {
  CGDR_ENTER(PMPI_Iprobe(src, tag, c, flag, st));
  return cgdr::engine::iprobe(src, tag, c, flag, st);
}

CGDR_API int MPI_Mprobe(int src, int tag, MPI_Comm c, MPI_Message* m, MPI_Status* st) {
  CGDR_ENTER(PMPI_Mprobe(src, tag, c, m, st));
  return cgdr::engine::mprobe(src, tag, c, m, st);
}

CGDR_API int MPI_Improbe(int src, int tag, MPI_Comm c, int* flag, MPI_Message* m, MPI_Status* st) {
  CGDR_ENTER(PMPI_Improbe(src, tag, c, flag, m, st));
  return cgdr::engine::improbe(src, tag, c, flag, m, st);
}
