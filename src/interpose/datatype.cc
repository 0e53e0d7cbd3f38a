// MPI_Type_free: the freed handle may name another type later, so cgdr forgets what it cached.
#include <mpi.h>

#include "base/dtype.hpp"
#include "interpose/guard.hpp"

CGDR_API int MPI_Type_free(MPI_Datatype* t) {
  CGDR_ENTER(PMPI_Type_free(t));
  return cgdr::base::freeDatatype(t);
}
