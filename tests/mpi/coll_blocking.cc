// Every blocking collective on every buffer kind (kinds differ across ranks), with MPI_IN_PLACE
// where MPI allows it, counts 0, 1, odd and large, uneven and zero counts in the v-variants.
// Expected results are computed locally from every rank's seeded input.
#include <numeric>

#include "coll_common.hpp"

namespace {

using ct::TBuf;
using V = std::vector<std::int32_t>;
int me, np;
int tagNo = 0;

void bcast(t::Kind sk, t::Kind rk, int n) {
  for (int root = 0; root < np; ++root) {
    int tag = ++tagNo;
    TBuf<std::int32_t> b(me == root ? sk : rk, n);
    b.set(me == root ? ct::input(root, tag, n) : V(n, -7));
    T_MPI(MPI_Bcast(b.ptr(), n, MPI_INT, root, MPI_COMM_WORLD));
    ct::same(b.get(), ct::input(root, tag, n), "Bcast");
  }
}

void gatherScatter(t::Kind sk, t::Kind rk, int n, bool inPlace) {
  int root = np - 1, tag = ++tagNo;
  // Gather: root gets every rank's block in rank order.
  TBuf<std::int32_t> s(sk, n), r(rk, static_cast<std::size_t>(n) * np);
  s.set(ct::input(me, tag, n));
  V want;
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, n);
    want.insert(want.end(), in.begin(), in.end());
  }
  if (me == root && inPlace) {
    V init(static_cast<std::size_t>(n) * np, -1);
    std::copy(want.begin() + static_cast<long>(n) * me, want.begin() + static_cast<long>(n) * (me + 1),
              init.begin() + static_cast<long>(n) * me);
    r.set(init);
  }
  T_MPI(MPI_Gather(me == root && inPlace ? MPI_IN_PLACE : s.ptr(), n, MPI_INT, r.ptr(), n, MPI_INT, root, MPI_COMM_WORLD));
  if (me == root) ct::same(r.get(), want, inPlace ? "Gather in place" : "Gather");
  // Scatter: each rank gets its block of the root's buffer.
  tag = ++tagNo;
  TBuf<std::int32_t> ss(sk, static_cast<std::size_t>(n) * np), rr(rk, n);
  if (me == root) ss.set(ct::input(root, tag, static_cast<std::size_t>(n) * np));
  void* rbuf = rr.ptr();
  if (me == root && inPlace) rbuf = MPI_IN_PLACE;
  T_MPI(MPI_Scatter(ss.ptr(), n, MPI_INT, rbuf, n, MPI_INT, root, MPI_COMM_WORLD));
  auto all = ct::input(root, tag, static_cast<std::size_t>(n) * np);
  if (!(me == root && inPlace))
    ct::same(rr.get(), V(all.begin() + static_cast<long>(n) * me, all.begin() + static_cast<long>(n) * (me + 1)), "Scatter");
}

// Uneven counts with a zero: rank q sends (q * n) % 7 + (q == 1 ? 0 : n) elements.
int vcount(int q, int n) { return q == 1 ? 0 : n + (q * 5) % 7; }

void gatherScatterV(t::Kind sk, t::Kind rk, int n) {
  int root = 0, tag = ++tagNo;
  std::vector<int> cs(np), ds(np);
  int total = 0;
  for (int q = 0; q < np; ++q) {
    cs[q] = vcount(q, n);
    ds[q] = total + 2;  // gaps between blocks stay untouched
    total = ds[q] + cs[q];
  }
  TBuf<std::int32_t> s(sk, cs[me]), r(rk, total + 1);
  s.set(ct::input(me, tag, cs[me]));
  V want(total + 1, -5);
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, cs[q]);
    std::copy(in.begin(), in.end(), want.begin() + ds[q]);
  }
  r.set(V(total + 1, -5));
  T_MPI(MPI_Gatherv(s.ptr(), cs[me], MPI_INT, r.ptr(), cs.data(), ds.data(), MPI_INT, root, MPI_COMM_WORLD));
  if (me == root) ct::same(r.get(), want, "Gatherv");
  tag = ++tagNo;
  TBuf<std::int32_t> ss(sk, total + 1), rr(rk, cs[me] + 1);
  auto src = ct::input(root, tag, total + 1);
  if (me == root) ss.set(src);
  rr.set(V(cs[me] + 1, -9));
  T_MPI(MPI_Scatterv(ss.ptr(), cs.data(), ds.data(), MPI_INT, rr.ptr(), cs[me], MPI_INT, root, MPI_COMM_WORLD));
  V w(src.begin() + ds[me], src.begin() + ds[me] + cs[me]);
  w.push_back(-9);
  ct::same(rr.get(), w, "Scatterv");
}

void allgather(t::Kind sk, t::Kind rk, int n, bool inPlace) {
  int tag = ++tagNo;
  TBuf<std::int32_t> s(sk, n), r(rk, static_cast<std::size_t>(n) * np);
  V want;
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, n);
    want.insert(want.end(), in.begin(), in.end());
  }
  s.set(ct::input(me, tag, n));
  if (inPlace) {
    V init(static_cast<std::size_t>(n) * np, -3);
    std::copy(want.begin() + static_cast<long>(n) * me, want.begin() + static_cast<long>(n) * (me + 1),
              init.begin() + static_cast<long>(n) * me);
    r.set(init);
  }
  T_MPI(MPI_Allgather(inPlace ? MPI_IN_PLACE : s.ptr(), n, MPI_INT, r.ptr(), n, MPI_INT, MPI_COMM_WORLD));
  ct::same(r.get(), want, inPlace ? "Allgather in place" : "Allgather");
  // Allgatherv with uneven counts.
  tag = ++tagNo;
  std::vector<int> cs(np), ds(np);
  int total = 0;
  for (int q = 0; q < np; ++q) {
    cs[q] = vcount(q, n);
    ds[q] = total;
    total += cs[q];
  }
  TBuf<std::int32_t> sv(sk, cs[me]), rv(rk, total);
  sv.set(ct::input(me, tag, cs[me]));
  V wv;
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, cs[q]);
    wv.insert(wv.end(), in.begin(), in.end());
  }
  T_MPI(MPI_Allgatherv(sv.ptr(), cs[me], MPI_INT, rv.ptr(), cs.data(), ds.data(), MPI_INT, MPI_COMM_WORLD));
  ct::same(rv.get(), wv, "Allgatherv");
}

void alltoall(t::Kind sk, t::Kind rk, int n, bool inPlace) {
  int tag = ++tagNo;
  std::size_t total = static_cast<std::size_t>(n) * np;
  TBuf<std::int32_t> s(sk, total), r(rk, total);
  s.set(ct::input(me, tag, total));
  if (inPlace) r.set(ct::input(me, tag, total));
  V want;
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, total);
    want.insert(want.end(), in.begin() + static_cast<long>(n) * me, in.begin() + static_cast<long>(n) * (me + 1));
  }
  T_MPI(MPI_Alltoall(inPlace ? MPI_IN_PLACE : s.ptr(), n, MPI_INT, r.ptr(), n, MPI_INT, MPI_COMM_WORLD));
  ct::same(r.get(), want, inPlace ? "Alltoall in place" : "Alltoall");
  // Alltoallv and Alltoallw: rank q sends vcount(dest, n) elements to dest.
  tag = ++tagNo;
  std::vector<int> scs(np), sds(np), rcs(np), rds(np), sbs(np), rbs(np);
  int stot = 0, rtot = 0;
  for (int q = 0; q < np; ++q) {
    scs[q] = vcount(q, n);
    sds[q] = stot;
    sbs[q] = stot * 4;
    stot += scs[q];
    rcs[q] = vcount(me, n);
    rds[q] = rtot;
    rbs[q] = rtot * 4;
    rtot += rcs[q];
  }
  TBuf<std::int32_t> sv(sk, stot), rv(rk, rtot), rw(rk, rtot);
  sv.set(ct::input(me, tag, stot));
  V wv;
  for (int q = 0; q < np; ++q) {
    int off = 0;
    for (int d = 0; d < me; ++d) off += vcount(d, n);
    auto src = ct::input(q, tag, off + vcount(me, n));
    wv.insert(wv.end(), src.begin() + off, src.end());
  }
  T_MPI(MPI_Alltoallv(sv.ptr(), scs.data(), sds.data(), MPI_INT, rv.ptr(), rcs.data(), rds.data(), MPI_INT, MPI_COMM_WORLD));
  ct::same(rv.get(), wv, "Alltoallv");
  std::vector<MPI_Datatype> types(np, MPI_INT);
  T_MPI(MPI_Alltoallw(sv.ptr(), scs.data(), sbs.data(), types.data(), rw.ptr(), rcs.data(), rbs.data(), types.data(),
                      MPI_COMM_WORLD));
  ct::same(rw.get(), wv, "Alltoallw");
}

void reductions(t::Kind sk, t::Kind rk, int n, bool inPlace) {
  int tag = ++tagNo;
  V sum(n, 0), scan(n, 0), exscan(n, 0), mx(n, INT32_MIN);
  V mine = ct::input(me, tag, n);
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, n);
    for (int i = 0; i < n; ++i) {
      sum[i] += in[i];
      mx[i] = std::max(mx[i], in[i]);
      if (q <= me) scan[i] += in[i];
      if (q < me) exscan[i] += in[i];
    }
  }
  TBuf<std::int32_t> s(sk, n), r(rk, n);
  auto run = [&](const char* what, auto&& call, const V& want, bool check = true) {
    s.set(mine);
    r.set(inPlace ? mine : V(n, 99));
    T_MPI(call(inPlace ? MPI_IN_PLACE : static_cast<void*>(s.ptr()), r.ptr()));
    if (check) ct::same(r.get(), want, what);
  };
  run("Allreduce", [&](void* a, void* b) { return MPI_Allreduce(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, sum);
  run("Allreduce max", [&](void* a, void* b) { return MPI_Allreduce(a, b, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD); }, mx);
  // MPICH 4.0.2 crashes in an in-place MPI_Reduce at a non-zero root (2 ranks, >= 1 KiB).
  int root = inPlace && t::isMpich() ? 0 : np / 2;
  s.set(mine);
  r.set(inPlace && me == root ? mine : V(n, 99));
  T_MPI(MPI_Reduce(inPlace && me == root ? MPI_IN_PLACE : s.ptr(), r.ptr(), n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
  if (me == root) ct::same(r.get(), sum, "Reduce");
  run("Scan", [&](void* a, void* b) { return MPI_Scan(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, scan);
  run("Exscan", [&](void* a, void* b) { return MPI_Exscan(a, b, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); }, exscan, me > 0);
  // Reduce_scatter_block and Reduce_scatter (uneven counts).
  tag = ++tagNo;
  std::size_t total = static_cast<std::size_t>(n) * np;
  V all(total, 0);
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, total);
    for (std::size_t i = 0; i < total; ++i) all[i] += in[i];
  }
  TBuf<std::int32_t> big(sk, total), part(rk, inPlace ? total : n);
  big.set(ct::input(me, tag, total));
  if (inPlace) part.set(ct::input(me, tag, total));
  T_MPI(MPI_Reduce_scatter_block(inPlace ? MPI_IN_PLACE : big.ptr(), part.ptr(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  ct::same(part.get(), V(all.begin() + static_cast<long>(n) * me, all.begin() + static_cast<long>(n) * (me + 1)),
           "Reduce_scatter_block", n);
  std::vector<int> cs(np);
  int tot = 0, off = 0;
  for (int q = 0; q < np; ++q) {
    cs[q] = vcount(q, n);
    if (q < me) off += cs[q];
    tot += cs[q];
  }
  tag = ++tagNo;
  V allv(tot, 0);
  for (int q = 0; q < np; ++q) {
    auto in = ct::input(q, tag, tot);
    for (int i = 0; i < tot; ++i) allv[i] += in[i];
  }
  TBuf<std::int32_t> bv(sk, tot), pv(rk, inPlace ? tot : cs[me]);
  bv.set(ct::input(me, tag, tot));
  if (inPlace) pv.set(ct::input(me, tag, tot));
  T_MPI(MPI_Reduce_scatter(inPlace ? MPI_IN_PLACE : bv.ptr(), pv.ptr(), cs.data(), MPI_INT, MPI_SUM, MPI_COMM_WORLD));
  ct::same(pv.get(), V(allv.begin() + off, allv.begin() + off + cs[me]), "Reduce_scatter", cs[me]);
  // Reduce_local: inout = in + inout.
  TBuf<std::int32_t> a(sk, n), b(rk, n);
  a.set(mine);
  b.set(ct::input(me + 1, tag, n));
  T_MPI(MPI_Reduce_local(a.ptr(), b.ptr(), n, MPI_INT, MPI_SUM));
  V lw(n);
  auto other = ct::input(me + 1, tag, n);
  for (int i = 0; i < n; ++i) lw[i] = mine[i] + other[i];
  ct::same(b.get(), lw, "Reduce_local");
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "coll_blocking");
  me = t::rank();
  np = t::size();
  for (auto pair : pairs) {
    auto [sk, rk] = ct::kindsFor(me, pair);
    for (int n : ct::counts(argc, argv)) {
      bcast(sk, rk, n);
      for (bool inPlace : {false, true}) {
        gatherScatter(sk, rk, n, inPlace);
        allgather(sk, rk, n, inPlace);
        alltoall(sk, rk, n, inPlace);
        reductions(sk, rk, n, inPlace);
      }
      gatherScatterV(sk, rk, n);
      T_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
  }
  return t::finish("coll_blocking");
}
