// Persistent collectives on any buffer kind, where the real MPI offers them: Open MPI 4.1 as
// MPIX_*_init (its pcollreq extension), MPI-4 libraries such as MPICH 4 as MPI_*_init. The real
// persistent request runs on staged buffers; each MPI_Start refreshes the staged inputs.
#include <mpi.h>
#include <mpi-ext.h>

#include "interpose/coll_support.hpp"

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define CGDR_PCOLL(name) MPIX_##name##_init
#define CGDR_PPCOLL(name) PMPIX_##name##_init
#define CGDR_HAVE_PCOLL 1
#elif MPI_VERSION >= 4
#define CGDR_PCOLL(name) MPI_##name##_init
#define CGDR_PPCOLL(name) PMPI_##name##_init
#define CGDR_HAVE_PCOLL 1
#endif

#ifdef CGDR_HAVE_PCOLL

using namespace cgdr;
using coll::recvPtr;
using coll::sendPtr;
using interpose::initColl;

CGDR_API int CGDR_PCOLL(Barrier)(MPI_Comm c, MPI_Info info, MPI_Request* q) {
  return CGDR_PPCOLL(Barrier)(c, info, q);
}

CGDR_API int CGDR_PCOLL(Bcast)(void* b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Bcast)(b, n, t, root, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planBcast(g, b, n, t, root, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Bcast)(recvPtr(g, sl, b), n, t, root, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Gather)(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Gather)(s, sc, stp, r, rc, rt, root, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planGather(g, s, sc, stp, r, rc, rt, root, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Gather)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, root, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Gatherv)(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, int root, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Gatherv)(s, sc, stp, r, rcs, ds, rt, root, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planGatherv(g, s, sc, stp, r, rcs, ds, rt, root, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Gatherv)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rcs, ds, rt, root, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Scatter)(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Scatter)(s, sc, stp, r, rc, rt, root, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScatter(g, s, sc, stp, r, rc, rt, root, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Scatter)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, root, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Scatterv)(const void* s, const int scs[], const int ds[], MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Scatterv)(s, scs, ds, stp, r, rc, rt, root, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScatterv(g, s, scs, ds, stp, r, rc, rt, root, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Scatterv)(sendPtr(g, sl, s), scs, ds, stp, recvPtr(g, sl, r), rc, rt, root, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Allgather)(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Allgather)(s, sc, stp, r, rc, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAllgather(g, s, sc, stp, r, rc, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Allgather)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Allgatherv)(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Allgatherv)(s, sc, stp, r, rcs, ds, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAllgatherv(g, s, sc, stp, r, rcs, ds, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Allgatherv)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rcs, ds, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Alltoall)(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Alltoall)(s, sc, stp, r, rc, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAlltoall(g, s, sc, stp, r, rc, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Alltoall)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Alltoallv)(const void* s, const int scs[], const int sds[], MPI_Datatype stp, void* r, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Alltoallv)(s, scs, sds, stp, r, rcs, rds, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAlltoallv(g, s, scs, sds, stp, r, rcs, rds, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Alltoallv)(sendPtr(g, sl, s), scs, sds, stp, recvPtr(g, sl, r), rcs, rds, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Alltoallw)(const void* s, const int scs[], const int sds[], const MPI_Datatype sts[], void* r, const int rcs[], const int rds[], const MPI_Datatype rts[], MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Alltoallw)(s, scs, sds, sts, r, rcs, rds, rts, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAlltoallw(g, s, scs, sds, sts, r, rcs, rds, rts, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Alltoallw)(sendPtr(g, sl, s), scs, sds, sts, recvPtr(g, sl, r), rcs, rds, rts, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Reduce)(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Reduce)(s, r, n, t, op, root, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planReduce(g, s, r, n, t, root, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Reduce)(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, root, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Allreduce)(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Allreduce)(s, r, n, t, op, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAllreduce(g, s, r, n, t, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Allreduce)(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Reduce_scatter)(const void* s, void* r, const int rcs[], MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Reduce_scatter)(s, r, rcs, t, op, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planReduceScatter(g, s, r, rcs, t, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Reduce_scatter)(sendPtr(g, sl, s), recvPtr(g, sl, r), rcs, t, op, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Reduce_scatter_block)(const void* s, void* r, int rc, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Reduce_scatter_block)(s, r, rc, t, op, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planReduceScatterBlock(g, s, r, rc, t, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Reduce_scatter_block)(sendPtr(g, sl, s), recvPtr(g, sl, r), rc, t, op, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Scan)(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Scan)(s, r, n, t, op, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScan(g, s, r, n, t, c, false);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Scan)(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Exscan)(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Exscan)(s, r, n, t, op, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScan(g, s, r, n, t, c, true);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Exscan)(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, c, info, x); });
}

// Neighbourhood collectives: blocks per neighbour of the communicator's topology.

CGDR_API int CGDR_PCOLL(Neighbor_allgather)(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Neighbor_allgather)(s, sc, stp, r, rc, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAllgather(g, s, sc, stp, r, rc, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Neighbor_allgather)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Neighbor_allgatherv)(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Neighbor_allgatherv)(s, sc, stp, r, rcs, ds, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAllgatherv(g, s, sc, stp, r, rcs, ds, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Neighbor_allgatherv)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rcs, ds, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Neighbor_alltoall)(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Neighbor_alltoall)(s, sc, stp, r, rc, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAlltoall(g, s, sc, stp, r, rc, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Neighbor_alltoall)(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Neighbor_alltoallv)(const void* s, const int scs[], const int sds[], MPI_Datatype stp, void* r, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Neighbor_alltoallv)(s, scs, sds, stp, r, rcs, rds, rt, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAlltoallv(g, s, scs, sds, stp, r, rcs, rds, rt, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Neighbor_alltoallv)(sendPtr(g, sl, s), scs, sds, stp, recvPtr(g, sl, r), rcs, rds, rt, c, info, x); });
}

CGDR_API int CGDR_PCOLL(Neighbor_alltoallw)(const void* s, const int scs[], const MPI_Aint sds[], const MPI_Datatype sts[], void* r, const int rcs[], const MPI_Aint rds[], const MPI_Datatype rts[], MPI_Comm c, MPI_Info info, MPI_Request* q) {
  CGDR_COLL_ENTER(c, CGDR_PPCOLL(Neighbor_alltoallw)(s, scs, sds, sts, r, rcs, rds, rts, c, info, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planNeighborAlltoallw(g, s, scs, sds, sts, r, rcs, rds, rts, c);
  return initColl(c, std::move(st), q, [&](MPI_Request* x) { return CGDR_PPCOLL(Neighbor_alltoallw)(sendPtr(g, sl, s), scs, sds, sts, recvPtr(g, sl, r), rcs, rds, rts, c, info, x); });
}

#endif  // CGDR_HAVE_PCOLL
