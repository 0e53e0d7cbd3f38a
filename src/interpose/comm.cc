// Communicator creation and destruction: every new intracommunicator gets its peer table (and
// context id) inside the creating call; freed ones are forgotten. MPI_Buffer_detach waits for the
// engine's buffered sends. Not registered, so served by the real MPI alone on every member:
// MPI_Comm_idup (its communicator exists only once the request completes, where no collective
// may block), intercommunicators, and MPI-4's MPI_Comm_create_from_group.
#include <mpi.h>

#include "engine/comm_table.hpp"
#include "engine/progress.hpp"
#include "engine/shm_engine.hpp"
#include "interpose/guard.hpp"

namespace {
int created(int rc, MPI_Comm* c) {
  if (rc == MPI_SUCCESS) cgdr::engine::comms::created(*c);
  return rc;
}

// Handles the real MPI never frees: the call goes to it as it is (it reports the error) and cgdr
// keeps the table. Forgetting MPI_COMM_WORLD's on one rank would send that rank's messages
// through the real MPI while its peers' go through the engine: they would never meet.
bool neverFreed(const MPI_Comm* c) {
  return !c || *c == MPI_COMM_NULL || *c == MPI_COMM_WORLD || *c == MPI_COMM_SELF;
}
}  // namespace

CGDR_API int MPI_Comm_dup(MPI_Comm c, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Comm_dup(c, n));
  return created(PMPI_Comm_dup(c, n), n);
}

CGDR_API int MPI_Comm_dup_with_info(MPI_Comm c, MPI_Info i, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Comm_dup_with_info(c, i, n));
  return created(PMPI_Comm_dup_with_info(c, i, n), n);
}

CGDR_API int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Comm_split(c, color, key, n));
  return created(PMPI_Comm_split(c, color, key, n), n);
}

CGDR_API int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info i, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Comm_split_type(c, type, key, i, n));
  return created(PMPI_Comm_split_type(c, type, key, i, n), n);
}

CGDR_API int MPI_Comm_create(MPI_Comm c, MPI_Group g, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Comm_create(c, g, n));
  return created(PMPI_Comm_create(c, g, n), n);
}

CGDR_API int MPI_Comm_create_group(MPI_Comm c, MPI_Group g, int tag, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Comm_create_group(c, g, tag, n));
  return created(PMPI_Comm_create_group(c, g, tag, n), n);
}

CGDR_API int MPI_Cart_create(MPI_Comm c, int ndims, const int dims[], const int periods[], int reorder,
                             MPI_Comm* n) {
  CGDR_ENTER(PMPI_Cart_create(c, ndims, dims, periods, reorder, n));
  return created(PMPI_Cart_create(c, ndims, dims, periods, reorder, n), n);
}

CGDR_API int MPI_Cart_sub(MPI_Comm c, const int remain[], MPI_Comm* n) {
  CGDR_ENTER(PMPI_Cart_sub(c, remain, n));
  return created(PMPI_Cart_sub(c, remain, n), n);
}

CGDR_API int MPI_Graph_create(MPI_Comm c, int nnodes, const int index[], const int edges[], int reorder,
                              MPI_Comm* n) {
  CGDR_ENTER(PMPI_Graph_create(c, nnodes, index, edges, reorder, n));
  return created(PMPI_Graph_create(c, nnodes, index, edges, reorder, n), n);
}

CGDR_API int MPI_Dist_graph_create(MPI_Comm c, int nsrc, const int sources[], const int degrees[],
                                   const int dests[], const int weights[], MPI_Info i, int reorder, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Dist_graph_create(c, nsrc, sources, degrees, dests, weights, i, reorder, n));
  return created(PMPI_Dist_graph_create(c, nsrc, sources, degrees, dests, weights, i, reorder, n), n);
}

CGDR_API int MPI_Dist_graph_create_adjacent(MPI_Comm c, int indegree, const int sources[], const int sweights[],
                                            int outdegree, const int dests[], const int dweights[], MPI_Info i,
                                            int reorder, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Dist_graph_create_adjacent(c, indegree, sources, sweights, outdegree, dests, dweights, i, reorder,
                                             n));
  return created(
      PMPI_Dist_graph_create_adjacent(c, indegree, sources, sweights, outdegree, dests, dweights, i, reorder, n), n);
}

CGDR_API int MPI_Intercomm_merge(MPI_Comm c, int high, MPI_Comm* n) {
  CGDR_ENTER(PMPI_Intercomm_merge(c, high, n));
  return created(PMPI_Intercomm_merge(c, high, n), n);
}

CGDR_API int MPI_Comm_free(MPI_Comm* c) {
  CGDR_ENTER(PMPI_Comm_free(c));
  if (neverFreed(c)) return PMPI_Comm_free(c);
  cgdr::engine::comms::freed(*c);
  return PMPI_Comm_free(c);
}

CGDR_API int MPI_Comm_disconnect(MPI_Comm* c) {
  CGDR_ENTER(PMPI_Comm_disconnect(c));
  if (neverFreed(c)) return PMPI_Comm_disconnect(c);
  cgdr::engine::comms::freed(*c);
  return PMPI_Comm_disconnect(c);
}

CGDR_API int MPI_Buffer_detach(void* buf, int* size) {
  CGDR_ENTER(PMPI_Buffer_detach(buf, size));
  if (auto* e = cgdr::engine::ShmEngine::get()) {
    cgdr::engine::Backoff b;
    while (e->buffered() > 0) {
      cgdr::engine::progressAll();
      b.pause();
    }
  }
  cgdr::engine::beforeBlocking();
  return PMPI_Buffer_detach(buf, size);
}
