// Blocking collectives on any buffer kind: GPU buffers are staged through pinned host memory and
// the real MPI runs the collective on the host copies. While a rank blocks in one with engine
// work pending, the engine's helper thread keeps serving its co-located peers.
#include <mpi.h>

#include "interpose/coll_support.hpp"

using namespace cgdr;
using coll::recvPtr;
using coll::sendPtr;
using interpose::blockingColl;

CGDR_API int MPI_Barrier(MPI_Comm c) {
  CGDR_ENTER(PMPI_Barrier(c));
  engine::beforeBlocking();
  engine::BlockingScope scope;
  return PMPI_Barrier(c);
}

CGDR_API int MPI_Bcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Bcast(b, n, t, root, c));
  coll::Staging st;
  auto sl = coll::planBcast(st, b, n, t, root, c);
  return blockingColl(c, st, [&] { return PMPI_Bcast(recvPtr(st, sl, b), n, t, root, c); });
}

CGDR_API int MPI_Gather(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Gather(s, sc, stp, r, rc, rt, root, c));
  coll::Staging st;
  auto sl = coll::planGather(st, s, sc, stp, r, rc, rt, root, c);
  return blockingColl(c, st, [&] { return PMPI_Gather(sendPtr(st, sl, s), sc, stp, recvPtr(st, sl, r), rc, rt, root, c); });
}

CGDR_API int MPI_Gatherv(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, int root, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Gatherv(s, sc, stp, r, rcs, ds, rt, root, c));
  coll::Staging st;
  auto sl = coll::planGatherv(st, s, sc, stp, r, rcs, ds, rt, root, c);
  return blockingColl(c, st, [&] { return PMPI_Gatherv(sendPtr(st, sl, s), sc, stp, recvPtr(st, sl, r), rcs, ds, rt, root, c); });
}

CGDR_API int MPI_Scatter(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Scatter(s, sc, stp, r, rc, rt, root, c));
  coll::Staging st;
  auto sl = coll::planScatter(st, s, sc, stp, r, rc, rt, root, c);
  return blockingColl(c, st, [&] { return PMPI_Scatter(sendPtr(st, sl, s), sc, stp, recvPtr(st, sl, r), rc, rt, root, c); });
}

CGDR_API int MPI_Scatterv(const void* s, const int scs[], const int ds[], MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Scatterv(s, scs, ds, stp, r, rc, rt, root, c));
  coll::Staging st;
  auto sl = coll::planScatterv(st, s, scs, ds, stp, r, rc, rt, root, c);
  return blockingColl(c, st, [&] { return PMPI_Scatterv(sendPtr(st, sl, s), scs, ds, stp, recvPtr(st, sl, r), rc, rt, root, c); });
}

CGDR_API int MPI_Allgather(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Allgather(s, sc, stp, r, rc, rt, c));
  coll::Staging st;
  auto sl = coll::planAllgather(st, s, sc, stp, r, rc, rt, c);
  return blockingColl(c, st, [&] { return PMPI_Allgather(sendPtr(st, sl, s), sc, stp, recvPtr(st, sl, r), rc, rt, c); });
}

CGDR_API int MPI_Allgatherv(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Allgatherv(s, sc, stp, r, rcs, ds, rt, c));
  coll::Staging st;
  auto sl = coll::planAllgatherv(st, s, sc, stp, r, rcs, ds, rt, c);
  return blockingColl(c, st, [&] { return PMPI_Allgatherv(sendPtr(st, sl, s), sc, stp, recvPtr(st, sl, r), rcs, ds, rt, c); });
}

CGDR_API int MPI_Alltoall(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Alltoall(s, sc, stp, r, rc, rt, c));
  coll::Staging st;
  auto sl = coll::planAlltoall(st, s, sc, stp, r, rc, rt, c);
  return blockingColl(c, st, [&] { return PMPI_Alltoall(sendPtr(st, sl, s), sc, stp, recvPtr(st, sl, r), rc, rt, c); });
}

CGDR_API int MPI_Alltoallv(const void* s, const int scs[], const int sds[], MPI_Datatype stp, void* r, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Alltoallv(s, scs, sds, stp, r, rcs, rds, rt, c));
  coll::Staging st;
  auto sl = coll::planAlltoallv(st, s, scs, sds, stp, r, rcs, rds, rt, c);
  return blockingColl(c, st, [&] { return PMPI_Alltoallv(sendPtr(st, sl, s), scs, sds, stp, recvPtr(st, sl, r), rcs, rds, rt, c); });
}

CGDR_API int MPI_Alltoallw(const void* s, const int scs[], const int sds[], const MPI_Datatype sts[], void* r, const int rcs[], const int rds[], const MPI_Datatype rts[], MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Alltoallw(s, scs, sds, sts, r, rcs, rds, rts, c));
  coll::Staging st;
  auto sl = coll::planAlltoallw(st, s, scs, sds, sts, r, rcs, rds, rts, c);
  return blockingColl(c, st, [&] { return PMPI_Alltoallw(sendPtr(st, sl, s), scs, sds, sts, recvPtr(st, sl, r), rcs, rds, rts, c); });
}

CGDR_API int MPI_Reduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Reduce(s, r, n, t, op, root, c));
  coll::Staging st;
  auto sl = coll::planReduce(st, s, r, n, t, root, c);
  return blockingColl(c, st, [&] { return PMPI_Reduce(sendPtr(st, sl, s), recvPtr(st, sl, r), n, t, op, root, c); });
}

CGDR_API int MPI_Allreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Allreduce(s, r, n, t, op, c));
  coll::Staging st;
  auto sl = coll::planAllreduce(st, s, r, n, t, c);
  return blockingColl(c, st, [&] { return PMPI_Allreduce(sendPtr(st, sl, s), recvPtr(st, sl, r), n, t, op, c); });
}

CGDR_API int MPI_Reduce_scatter(const void* s, void* r, const int rcs[], MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Reduce_scatter(s, r, rcs, t, op, c));
  coll::Staging st;
  auto sl = coll::planReduceScatter(st, s, r, rcs, t, c);
  return blockingColl(c, st, [&] { return PMPI_Reduce_scatter(sendPtr(st, sl, s), recvPtr(st, sl, r), rcs, t, op, c); });
}

CGDR_API int MPI_Reduce_scatter_block(const void* s, void* r, int rc, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Reduce_scatter_block(s, r, rc, t, op, c));
  coll::Staging st;
  auto sl = coll::planReduceScatterBlock(st, s, r, rc, t, c);
  return blockingColl(c, st, [&] { return PMPI_Reduce_scatter_block(sendPtr(st, sl, s), recvPtr(st, sl, r), rc, t, op, c); });
}

CGDR_API int MPI_Scan(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Scan(s, r, n, t, op, c));
  coll::Staging st;
  auto sl = coll::planScan(st, s, r, n, t, c, false);
  return blockingColl(c, st, [&] { return PMPI_Scan(sendPtr(st, sl, s), recvPtr(st, sl, r), n, t, op, c); });
}

CGDR_API int MPI_Exscan(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
  CGDR_BLOCKING_COLL_ENTER(c, PMPI_Exscan(s, r, n, t, op, c));
  coll::Staging st;
  auto sl = coll::planScan(st, s, r, n, t, c, true);
  return blockingColl(c, st, [&] { return PMPI_Exscan(sendPtr(st, sl, s), recvPtr(st, sl, r), n, t, op, c); });
}

CGDR_API int MPI_Reduce_local(const void* in, void* inout, int n, MPI_Datatype t, MPI_Op op) {
  CGDR_LOCAL_ENTER(PMPI_Reduce_local(in, inout, n, t, op));
  coll::Staging st;
  auto sl = coll::planReduceLocal(st, in, inout, n, t);
  return coll::runBlocking(MPI_COMM_SELF, st, [&] { return PMPI_Reduce_local(sendPtr(st, sl, in), recvPtr(st, sl, inout), n, t, op); });
}
