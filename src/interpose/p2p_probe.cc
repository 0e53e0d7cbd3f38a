// Probes: answered by the real MPI; blocking ones first hand over cgdr's queued sends.
#include <mpi.h>

#include "engine/progress.hpp"
#include "interpose/guard.hpp"

CGDR_API int MPI_Probe(int src, int tag, MPI_Comm c, MPI_Status* st) {
  CGDR_ENTER(PMPI_Probe(src, tag, c, st));
  cgdr::engine::beforeBlocking();
  return PMPI_Probe(src, tag, c, st);
}

CGDR_API int MPI_Iprobe(int src, int tag, MPI_Comm c, int* flag, MPI_Status* st) {
  CGDR_ENTER(PMPI_Iprobe(src, tag, c, flag, st));
  cgdr::engine::progressAll();
  return PMPI_Iprobe(src, tag, c, flag, st);
}

CGDR_API int MPI_Mprobe(int src, int tag, MPI_Comm c, MPI_Message* m, MPI_Status* st) {
  CGDR_ENTER(PMPI_Mprobe(src, tag, c, m, st));
  cgdr::engine::beforeBlocking();
  return PMPI_Mprobe(src, tag, c, m, st);
}

CGDR_API int MPI_Improbe(int src, int tag, MPI_Comm c, int* flag, MPI_Message* m, MPI_Status* st) {
  CGDR_ENTER(PMPI_Improbe(src, tag, c, flag, m, st));
  cgdr::engine::progressAll();
  return PMPI_Improbe(src, tag, c, flag, m, st);
}
