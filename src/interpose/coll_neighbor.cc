// Neighbourhood collectives (MPI_Neighbor_*, MPI_Ineighbor_*) on any buffer kind: GPU buffers are
// staged through pinned host memory, one block per in- or out-neighbour of the communicator's
// topology, and the real MPI runs the collective on the host copies.
#include <mpi.h>

#include "interpose/coll_support.hpp"

using namespace cgdr;
using coll::recvPtr;
using coll::sendPtr;
using interpose::blockingColl;
using interpose::startColl;

CGDR_API int MPI_Neighbor_allgather(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Neighbor_allgather(s, sc, stp, r, rc, rt, c));
  coll::Staging g;
  auto sl = coll::planNeighborAllgather(g, s, sc, stp, r, rc, rt, c);
  return blockingColl(c, g, [&] { return PMPI_Neighbor_allgather(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c); });
}

CGDR_API int MPI_Neighbor_allgatherv(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Neighbor_allgatherv(s, sc, stp, r, rcs, ds, rt, c));
  coll::Staging g;
  auto sl = coll::planNeighborAllgatherv(g, s, sc, stp, r, rcs, ds, rt, c);
  return blockingColl(c, g, [&] { return PMPI_Neighbor_allgatherv(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rcs, ds, rt, c); });
}

CGDR_API int MPI_Neighbor_alltoall(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Neighbor_alltoall(s, sc, stp, r, rc, rt, c));
  coll::Staging g;
  auto sl = coll::planNeighborAlltoall(g, s, sc, stp, r, rc, rt, c);
  return blockingColl(c, g, [&] { return PMPI_Neighbor_alltoall(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c); });
}

CGDR_API int MPI_Neighbor_alltoallv(const void* s, const int scs[], const int sds[], MPI_Datatype stp, void* r, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Neighbor_alltoallv(s, scs, sds, stp, r, rcs, rds, rt, c));
  coll::Staging g;
  auto sl = coll::planNeighborAlltoallv(g, s, scs, sds, stp, r, rcs, rds, rt, c);
  return blockingColl(c, g, [&] { return PMPI_Neighbor_alltoallv(sendPtr(g, sl, s), scs, sds, stp, recvPtr(g, sl, r), rcs, rds, rt, c); });
}

CGDR_API int MPI_Neighbor_alltoallw(const void* s, const int scs[], const MPI_Aint sds[], const MPI_Datatype sts[], void* r, const int rcs[], const MPI_Aint rds[], const MPI_Datatype rts[], MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Neighbor_alltoallw(s, scs, sds, sts, r, rcs, rds, rts, c));
  coll::Staging g;
  auto sl = coll::planNeighborAlltoallw(g, s, scs, sds, sts, r, rcs, rds, rts, c);
  return blockingColl(c, g, [&] { return PMPI_Neighbor_alltoallw(sendPtr(g, sl, s), scs, sds, sts, recvPtr(g, sl, r), rcs, rds, rts, c); });
}

CGDR_API int MPI_Ineighbor_allgather(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ineighbor_allgather(s, sc, stp, r, rc, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAllgather(g, s, sc, stp, r, rc, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ineighbor_allgather(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, x); });
}

CGDR_API int MPI_Ineighbor_allgatherv(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ineighbor_allgatherv(s, sc, stp, r, rcs, ds, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAllgatherv(g, s, sc, stp, r, rcs, ds, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ineighbor_allgatherv(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rcs, ds, rt, c, x); });
}

CGDR_API int MPI_Ineighbor_alltoall(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ineighbor_alltoall(s, sc, stp, r, rc, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAlltoall(g, s, sc, stp, r, rc, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ineighbor_alltoall(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, x); });
}

CGDR_API int MPI_Ineighbor_alltoallv(const void* s, const int scs[], const int sds[], MPI_Datatype stp, void* r, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ineighbor_alltoallv(s, scs, sds, stp, r, rcs, rds, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAlltoallv(g, s, scs, sds, stp, r, rcs, rds, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ineighbor_alltoallv(sendPtr(g, sl, s), scs, sds, stp, recvPtr(g, sl, r), rcs, rds, rt, c, x); });
}

CGDR_API int MPI_Ineighbor_alltoallw(const void* s, const int scs[], const MPI_Aint sds[], const MPI_Datatype sts[], void* r, const int rcs[], const MPI_Aint rds[], const MPI_Datatype rts[], MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ineighbor_alltoallw(s, scs, sds, sts, r, rcs, rds, rts, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAlltoallw(g, s, scs, sds, sts, r, rcs, rds, rts, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ineighbor_alltoallw(sendPtr(g, sl, s), scs, sds, sts, recvPtr(g, sl, r), rcs, rds, rts, c, x); });
}
