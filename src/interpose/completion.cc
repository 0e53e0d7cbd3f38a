// The wait/test family, MPI_Request_free, MPI_Request_get_status and MPI_Cancel.
#include <mpi.h>

#include "engine/completion.hpp"
#include "interpose/guard.hpp"

namespace e = cgdr::engine;

CGDR_API int MPI_Wait(MPI_Request* r, MPI_Status* st) {
  CGDR_ENTER(PMPI_Wait(r, st));
  return e::wait(r, st);
}

CGDR_API int MPI_Test(MPI_Request* r, int* flag, MPI_Status* st) {
  CGDR_ENTER(PMPI_Test(r, flag, st));
  return e::test(r, flag, st);
}

CGDR_API int MPI_Waitall(int n, MPI_Request rs[], MPI_Status sts[]) {
  CGDR_ENTER(PMPI_Waitall(n, rs, sts));
  return e::waitall(n, rs, sts);
}

CGDR_API int MPI_Testall(int n, MPI_Request rs[], int* flag, MPI_Status sts[]) {
  CGDR_ENTER(PMPI_Testall(n, rs, flag, sts));
  return e::testall(n, rs, flag, sts);
}

CGDR_API int MPI_Waitany(int n, MPI_Request rs[], int* index, MPI_Status* st) {
  CGDR_ENTER(PMPI_Waitany(n, rs, index, st));
  return e::waitany(n, rs, index, st);
}

CGDR_API int MPI_Testany(int n, MPI_Request rs[], int* index, int* flag, MPI_Status* st) {
  CGDR_ENTER(PMPI_Testany(n, rs, index, flag, st));
  return e::testany(n, rs, index, flag, st);
}

CGDR_API int MPI_Waitsome(int n, MPI_Request rs[], int* outcount, int indices[], MPI_Status sts[]) {
  CGDR_ENTER(PMPI_Waitsome(n, rs, outcount, indices, sts));
  return e::waitsome(n, rs, outcount, indices, sts);
}

CGDR_API int MPI_Testsome(int n, MPI_Request rs[], int* outcount, int indices[], MPI_Status sts[]) {
  CGDR_ENTER(PMPI_Testsome(n, rs, outcount, indices, sts));
  return e::testsome(n, rs, outcount, indices, sts);
}

CGDR_API int MPI_Request_get_status(MPI_Request r, int* flag, MPI_Status* st) {
  CGDR_ENTER(PMPI_Request_get_status(r, flag, st));
  return e::requestGetStatus(r, flag, st);
}

CGDR_API int MPI_Request_free(MPI_Request* r) {
  CGDR_ENTER(PMPI_Request_free(r));
  return e::requestFree(r);
}

CGDR_API int MPI_Cancel(MPI_Request* r) {
  CGDR_ENTER(PMPI_Cancel(r));
  return e::cancel(r);
}
