#include "coll/plans.hpp"

#include <algorithm>

#include "coll/spans.hpp"

namespace cgdr::coll {
namespace {

bool isInter(MPI_Comm c) {
  int inter = 0;
  PMPI_Comm_test_inter(c, &inter);
  return inter != 0;
}

// The receive buffer doubles as input when the send buffer is MPI_IN_PLACE.
Role outRole(const void* s) { return s == MPI_IN_PLACE ? Role::kInOut : Role::kOut; }

// A region of packed bytes [position, position + bytes) of a buffer of `size` bytes. The real
// MPI may use fewer bytes than the upper bound: the region is copied in first so untouched
// bytes are preserved.
base::Span packedRegion(MPI_Aint size, MPI_Aint position, MPI_Aint bytes) {
  base::Span s;
  MPI_Aint n = std::max<MPI_Aint>(0, std::min(bytes, size - position));
  s.lo = position;
  s.bytes = static_cast<std::size_t>(n);
  s.dataBytes = s.bytes;
  s.contiguous = false;
  return s;
}

// The slots of a neighbourhood collective, its spans computed from the degrees in nb: nothing
// without a topology (the real MPI refuses the call). Where an in-neighbour is MPI_PROC_NULL the
// MPI leaves its receive block alone, so the staged mirror must start as a copy of the buffer.
Slots neighborSlots(Staging& st, const Neighbors& nb, const void* sb, const base::Span& send, void* rb,
                    base::Span recv) {
  Slots s;
  if (!nb.topology) return s;
  if (nb.inNull) recv.contiguous = false;
  s.send = st.add(sb, send, Role::kIn);
  s.recv = st.add(rb, recv, Role::kOut);
  return s;
}

}  // namespace

Slots planBcast(Staging& st, void* buf, int count, MPI_Datatype t, int root, MPI_Comm c) {
  Slots s;
  RootRole role = rootRole(c, root);
  if (role == RootRole::kNone) return s;
  s.recv = st.add(buf, base::spanOf(count, t), role == RootRole::kRoot ? Role::kIn : Role::kOut);
  return s;
}

Slots planGather(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, int rc, MPI_Datatype rt,
                 int root, MPI_Comm c) {
  Slots s;
  RootRole role = rootRole(c, root);
  if (role == RootRole::kNonRoot) s.send = st.add(sb, base::spanOf(sc, stype), Role::kIn);
  if (role != RootRole::kRoot) return s;
  if (!isInter(c)) s.send = st.add(sb, base::spanOf(sc, stype), Role::kIn);
  s.recv = st.add(rb, spanBlocks(peerCount(c), rc, rt), isInter(c) ? Role::kOut : outRole(sb));
  return s;
}

Slots planGatherv(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, const int rcs[],
                  const int displs[], MPI_Datatype rt, int root, MPI_Comm c) {
  Slots s;
  RootRole role = rootRole(c, root);
  if (role == RootRole::kNonRoot) s.send = st.add(sb, base::spanOf(sc, stype), Role::kIn);
  if (role != RootRole::kRoot) return s;
  if (!isInter(c)) s.send = st.add(sb, base::spanOf(sc, stype), Role::kIn);
  s.recv = st.add(rb, spanV(peerCount(c), rcs, displs, rt), isInter(c) ? Role::kOut : outRole(sb));
  return s;
}

Slots planScatter(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, int rc, MPI_Datatype rt,
                  int root, MPI_Comm c) {
  Slots s;
  RootRole role = rootRole(c, root);
  if (role == RootRole::kNonRoot) s.recv = st.add(rb, base::spanOf(rc, rt), Role::kOut);
  if (role != RootRole::kRoot) return s;
  s.send = st.add(sb, spanBlocks(peerCount(c), sc, stype), Role::kIn);
  if (!isInter(c)) s.recv = st.add(rb, base::spanOf(rc, rt), Role::kOut);
  return s;
}

Slots planScatterv(Staging& st, const void* sb, const int scs[], const int displs[], MPI_Datatype stype,
                   void* rb, int rc, MPI_Datatype rt, int root, MPI_Comm c) {
  Slots s;
  RootRole role = rootRole(c, root);
  if (role == RootRole::kNonRoot) s.recv = st.add(rb, base::spanOf(rc, rt), Role::kOut);
  if (role != RootRole::kRoot) return s;
  s.send = st.add(sb, spanV(peerCount(c), scs, displs, stype), Role::kIn);
  if (!isInter(c)) s.recv = st.add(rb, base::spanOf(rc, rt), Role::kOut);
  return s;
}

Slots planAllgather(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, int rc, MPI_Datatype rt,
                    MPI_Comm c) {
  Slots s;
  s.send = st.add(sb, base::spanOf(sc, stype), Role::kIn);
  s.recv = st.add(rb, spanBlocks(peerCount(c), rc, rt), outRole(sb));
  return s;
}

Slots planAllgatherv(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, const int rcs[],
                     const int displs[], MPI_Datatype rt, MPI_Comm c) {
  Slots s;
  s.send = st.add(sb, base::spanOf(sc, stype), Role::kIn);
  s.recv = st.add(rb, spanV(peerCount(c), rcs, displs, rt), outRole(sb));
  return s;
}

Slots planAlltoall(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, int rc, MPI_Datatype rt,
                   MPI_Comm c) {
  Slots s;
  int p = peerCount(c);
  s.send = st.add(sb, spanBlocks(p, sc, stype), Role::kIn);
  s.recv = st.add(rb, spanBlocks(p, rc, rt), outRole(sb));
  return s;
}

Slots planAlltoallv(Staging& st, const void* sb, const int scs[], const int sds[], MPI_Datatype stype, void* rb,
                    const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c) {
  Slots s;
  int p = peerCount(c);
  if (sb != MPI_IN_PLACE) s.send = st.add(sb, spanV(p, scs, sds, stype), Role::kIn);
  s.recv = st.add(rb, spanV(p, rcs, rds, rt), outRole(sb));
  return s;
}

Slots planAlltoallw(Staging& st, const void* sb, const int scs[], const int sds[], const MPI_Datatype sts[],
                    void* rb, const int rcs[], const int rds[], const MPI_Datatype rts[], MPI_Comm c) {
  Slots s;
  int p = peerCount(c);
  if (sb != MPI_IN_PLACE) s.send = st.add(sb, spanW(p, scs, sds, sts), Role::kIn);
  s.recv = st.add(rb, spanW(p, rcs, rds, rts), outRole(sb));
  return s;
}

Slots planNeighborAllgather(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, int rc,
                            MPI_Datatype rt, MPI_Comm c) {
  Neighbors nb = neighborsOf(c);
  // One send block for every out-neighbour: not read at all where there is none.
  return neighborSlots(st, nb, sb, nb.out > 0 ? base::spanOf(sc, stype) : base::Span{}, rb,
                       spanBlocks(nb.in, rc, rt));
}

Slots planNeighborAllgatherv(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, const int rcs[],
                             const int displs[], MPI_Datatype rt, MPI_Comm c) {
  Neighbors nb = neighborsOf(c);
  return neighborSlots(st, nb, sb, nb.out > 0 ? base::spanOf(sc, stype) : base::Span{}, rb,
                       spanV(nb.in, rcs, displs, rt));
}

Slots planNeighborAlltoall(Staging& st, const void* sb, int sc, MPI_Datatype stype, void* rb, int rc,
                           MPI_Datatype rt, MPI_Comm c) {
  Neighbors nb = neighborsOf(c);
  return neighborSlots(st, nb, sb, spanBlocks(nb.out, sc, stype), rb, spanBlocks(nb.in, rc, rt));
}

Slots planNeighborAlltoallv(Staging& st, const void* sb, const int scs[], const int sds[], MPI_Datatype stype,
                            void* rb, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c) {
  Neighbors nb = neighborsOf(c);
  return neighborSlots(st, nb, sb, spanV(nb.out, scs, sds, stype), rb, spanV(nb.in, rcs, rds, rt));
}

Slots planNeighborAlltoallw(Staging& st, const void* sb, const int scs[], const MPI_Aint sds[],
                            const MPI_Datatype sts[], void* rb, const int rcs[], const MPI_Aint rds[],
                            const MPI_Datatype rts[], MPI_Comm c) {
  Neighbors nb = neighborsOf(c);
  return neighborSlots(st, nb, sb, spanW(nb.out, scs, sds, sts), rb, spanW(nb.in, rcs, rds, rts));
}

Slots planReduce(Staging& st, const void* sb, void* rb, int count, MPI_Datatype t, int root, MPI_Comm c) {
  Slots s;
  RootRole role = rootRole(c, root);
  base::Span span = base::spanOf(count, t);
  if (role == RootRole::kNone) return s;
  if (isInter(c)) {
    if (role == RootRole::kRoot) s.recv = st.add(rb, span, Role::kOut);
    else s.send = st.add(sb, span, Role::kIn);
    return s;
  }
  s.send = st.add(sb, span, Role::kIn);
  if (role == RootRole::kRoot) s.recv = st.add(rb, span, outRole(sb));
  return s;
}

Slots planAllreduce(Staging& st, const void* sb, void* rb, int count, MPI_Datatype t, MPI_Comm c) {
  Slots s;
  base::Span span = base::spanOf(count, t);
  s.send = st.add(sb, span, Role::kIn);
  s.recv = st.add(rb, span, outRole(sb));
  return s;
}

Slots planReduceScatter(Staging& st, const void* sb, void* rb, const int rcs[], MPI_Datatype t, MPI_Comm c) {
  Slots s;
  int n = 0, me = 0;
  PMPI_Comm_size(c, &n);
  PMPI_Comm_rank(c, &me);
  if (!rcs) return s;  // the real MPI refuses it
  base::Span all = base::spanOf(sum(n, rcs), t);
  s.send = st.add(sb, all, Role::kIn);
  s.recv = st.add(rb, sb == MPI_IN_PLACE ? all : base::spanOf(rcs[me], t), outRole(sb));
  return s;
}

Slots planReduceScatterBlock(Staging& st, const void* sb, void* rb, int rc, MPI_Datatype t, MPI_Comm c) {
  Slots s;
  base::Span all = spanBlocks(peerCount(c), rc, t);
  s.send = st.add(sb, all, Role::kIn);
  s.recv = st.add(rb, sb == MPI_IN_PLACE ? all : base::spanOf(rc, t), outRole(sb));
  return s;
}

Slots planScan(Staging& st, const void* sb, void* rb, int count, MPI_Datatype t, MPI_Comm c, bool exclusive) {
  Slots s;
  int me = 0;
  PMPI_Comm_rank(c, &me);
  base::Span span = base::spanOf(count, t);
  s.send = st.add(sb, span, Role::kIn);
  // Exscan leaves rank 0's receive buffer undefined: keep its bytes rather than write staging.
  s.recv = st.add(rb, span, exclusive && me == 0 ? Role::kInOut : outRole(sb));
  return s;
}

Slots planReduceLocal(Staging& st, const void* in, void* inout, int count, MPI_Datatype t) {
  Slots s;
  base::Span span = base::spanOf(count, t);
  s.send = st.add(in, span, Role::kIn);
  s.recv = st.add(inout, span, Role::kInOut);
  return s;
}

Slots planPack(Staging& st, const void* in, int count, MPI_Datatype t, void* out, MPI_Aint outsize,
               MPI_Aint position, MPI_Aint packBytes) {
  Slots s;
  s.send = st.add(in, base::spanOf(count, t), Role::kIn);
  s.recv = st.add(out, packedRegion(outsize, position, packBytes), Role::kOut);
  return s;
}

Slots planUnpack(Staging& st, const void* in, MPI_Aint insize, MPI_Aint position, MPI_Aint packBytes, void* out,
                 int count, MPI_Datatype t) {
  Slots s;
  s.send = st.add(in, packedRegion(insize, position, packBytes), Role::kIn);
  s.recv = st.add(out, base::spanOf(count, t), Role::kOut);
  return s;
}

}  // namespace cgdr::coll
