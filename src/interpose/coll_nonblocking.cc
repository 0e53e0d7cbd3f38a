// Non-blocking collectives on any buffer kind: GPU inputs are staged when the call starts, and
// outputs are copied back to the GPU when the request completes (in any wait/test call).
#include <mpi.h>

#include "interpose/coll_support.hpp"

using namespace cgdr;
using coll::recvPtr;
using coll::sendPtr;
using interpose::startColl;

CGDR_API int MPI_Ibarrier(MPI_Comm c, MPI_Request* q) {
  CGDR_ENTER(PMPI_Ibarrier(c, q));
  engine::progressAll();
  return PMPI_Ibarrier(c, q);
}

CGDR_API int MPI_Ibcast(void* b, int n, MPI_Datatype t, int root, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ibcast(b, n, t, root, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planBcast(g, b, n, t, root, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ibcast(recvPtr(g, sl, b), n, t, root, c, x); });
}

CGDR_API int MPI_Igather(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Igather(s, sc, stp, r, rc, rt, root, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planGather(g, s, sc, stp, r, rc, rt, root, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Igather(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, root, c, x); });
}

CGDR_API int MPI_Igatherv(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, int root, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Igatherv(s, sc, stp, r, rcs, ds, rt, root, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planGatherv(g, s, sc, stp, r, rcs, ds, rt, root, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Igatherv(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rcs, ds, rt, root, c, x); });
}

CGDR_API int MPI_Iscatter(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Iscatter(s, sc, stp, r, rc, rt, root, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScatter(g, s, sc, stp, r, rc, rt, root, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Iscatter(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, root, c, x); });
}

CGDR_API int MPI_Iscatterv(const void* s, const int scs[], const int ds[], MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, int root, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Iscatterv(s, scs, ds, stp, r, rc, rt, root, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScatterv(g, s, scs, ds, stp, r, rc, rt, root, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Iscatterv(sendPtr(g, sl, s), scs, ds, stp, recvPtr(g, sl, r), rc, rt, root, c, x); });
}

CGDR_API int MPI_Iallgather(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Iallgather(s, sc, stp, r, rc, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAllgather(g, s, sc, stp, r, rc, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Iallgather(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, x); });
}

CGDR_API int MPI_Iallgatherv(const void* s, int sc, MPI_Datatype stp, void* r, const int rcs[], const int ds[], MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Iallgatherv(s, sc, stp, r, rcs, ds, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAllgatherv(g, s, sc, stp, r, rcs, ds, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Iallgatherv(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rcs, ds, rt, c, x); });
}

CGDR_API int MPI_Ialltoall(const void* s, int sc, MPI_Datatype stp, void* r, int rc, MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ialltoall(s, sc, stp, r, rc, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAlltoall(g, s, sc, stp, r, rc, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ialltoall(sendPtr(g, sl, s), sc, stp, recvPtr(g, sl, r), rc, rt, c, x); });
}

CGDR_API int MPI_Ialltoallv(const void* s, const int scs[], const int sds[], MPI_Datatype stp, void* r, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ialltoallv(s, scs, sds, stp, r, rcs, rds, rt, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAlltoallv(g, s, scs, sds, stp, r, rcs, rds, rt, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ialltoallv(sendPtr(g, sl, s), scs, sds, stp, recvPtr(g, sl, r), rcs, rds, rt, c, x); });
}

CGDR_API int MPI_Ialltoallw(const void* s, const int scs[], const int sds[], const MPI_Datatype sts[], void* r, const int rcs[], const int rds[], const MPI_Datatype rts[], MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ialltoallw(s, scs, sds, sts, r, rcs, rds, rts, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAlltoallw(g, s, scs, sds, sts, r, rcs, rds, rts, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ialltoallw(sendPtr(g, sl, s), scs, sds, sts, recvPtr(g, sl, r), rcs, rds, rts, c, x); });
}

CGDR_API int MPI_Ireduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ireduce(s, r, n, t, op, root, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planReduce(g, s, r, n, t, root, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ireduce(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, root, c, x); });
}

CGDR_API int MPI_Iallreduce(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Iallreduce(s, r, n, t, op, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planAllreduce(g, s, r, n, t, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Iallreduce(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, c, x); });
}

CGDR_API int MPI_Ireduce_scatter(const void* s, void* r, const int rcs[], MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ireduce_scatter(s, r, rcs, t, op, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planReduceScatter(g, s, r, rcs, t, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ireduce_scatter(sendPtr(g, sl, s), recvPtr(g, sl, r), rcs, t, op, c, x); });
}

CGDR_API int MPI_Ireduce_scatter_block(const void* s, void* r, int rc, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Ireduce_scatter_block(s, r, rc, t, op, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planReduceScatterBlock(g, s, r, rc, t, c);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Ireduce_scatter_block(sendPtr(g, sl, s), recvPtr(g, sl, r), rc, t, op, c, x); });
}

CGDR_API int MPI_Iscan(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Iscan(s, r, n, t, op, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScan(g, s, r, n, t, c, false);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Iscan(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, c, x); });
}

CGDR_API int MPI_Iexscan(const void* s, void* r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, MPI_Request* q) {
  CGDR_COLL_ENTER(c, PMPI_Iexscan(s, r, n, t, op, c, q));
  auto st = std::make_unique<coll::Staging>();
  coll::Staging& g = *st;
  auto sl = coll::planScan(g, s, r, n, t, c, true);
  return startColl(c, std::move(st), q, [&](MPI_Request* x) { return PMPI_Iexscan(sendPtr(g, sl, s), recvPtr(g, sl, r), n, t, op, c, x); });
}
