// What cgdr stages for a collective, without a GPU. Neighbourhood collectives: coll::neighborsOf
// reads the in- and out-degree of Cartesian (periodic or not), graph and distributed graph
// topologies (made adjacent with weights, by MPI_Dist_graph_create without, or adjacent with an
// MPI_PROC_NULL source) and whether an in-neighbour is MPI_PROC_NULL; the plans make the receive
// span "copy in first" exactly then (the MPI leaves that block alone, so the staged mirror must
// hold the user's bytes), size both buffers from the degrees (the v- and w-variants from their
// counts and displacements), stage nothing without a topology or for no neighbours, and the
// w-variant's MPI_Aint displacements beyond 2 GiB are not truncated. Expected degrees come from
// the ranks' own arithmetic, not from the MPI. Arguments the MPI refuses (null count,
// displacement or type arrays, MPI_DATATYPE_NULL) stage nothing, and planning them calls no
// error handler: the real MPI reports the call, once.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "coll/plans.hpp"
#include "coll/spans.hpp"
#include "plain_check.hpp"

using namespace cgdr;

namespace {

int me = 0, np = 0;
constexpr int kCount = 5;

// The hull of blocks (displacement, bytes) in bytes: lo, bytes, data bytes.
struct Hull {
  long lo = 0, bytes = 0, data = 0;
};
Hull hullOf(const std::vector<std::pair<long, long>>& blocks) {
  Hull h;
  long lo = 0, hi = 0;
  bool any = false;
  for (auto [d, n] : blocks) {
    if (n == 0) continue;
    lo = any ? std::min(lo, d) : d;
    hi = any ? std::max(hi, d + n) : d + n;
    any = true;
    h.data += n;
  }
  if (any) {
    h.lo = lo;
    h.bytes = hi - lo;
  }
  return h;
}

void expectSpan(const char* what, const char* which, coll::Staging& st, int slot, const Hull& h, bool copyIn) {
  CHECK((slot >= 0) == (h.bytes > 0), "%s: rank %d: %s slot %d for %ld bytes", what, me, which, slot, h.bytes);
  if (slot < 0 || h.bytes == 0) return;
  const base::Span& sp = st.span(slot);
  CHECK(sp.lo == h.lo && static_cast<long>(sp.bytes) == h.bytes && static_cast<long>(sp.dataBytes) == h.data,
        "%s: rank %d: %s span lo %ld bytes %zu data %zu, expected %ld, %ld, %ld", what, me, which,
        static_cast<long>(sp.lo), sp.bytes, sp.dataBytes, h.lo, h.bytes, h.data);
  CHECK(sp.contiguous == !copyIn, "%s: rank %d: %s span %s copied in first", what, me, which,
        sp.contiguous ? "not" : "");
}

// MPI_Neighbor_alltoallv: block i of i + 1 ints at element displacement 3 * (degree - 1 - i) + 1
// (reversed, with gaps and an overlap-free hull that does not start at 0).
void expectV(const char* what, MPI_Comm comm, int out, int in, bool inNull) {
  auto arrays = [](int n, std::vector<int>& counts, std::vector<int>& displs, std::vector<std::pair<long, long>>& bl) {
    for (int i = 0; i < std::max(n, 1); ++i) {
      counts.push_back(i + 1);
      displs.push_back(3 * (n - 1 - i) + 1);
      if (i < n) bl.push_back({4L * displs.back(), 4L * counts.back()});
    }
  };
  std::vector<int> sc, sd, rc, rd;
  std::vector<std::pair<long, long>> sb, rb;
  arrays(out, sc, sd, sb);
  arrays(in, rc, rd, rb);
  std::vector<int> s(64), r(64);
  coll::Staging st;
  coll::Slots sl = coll::planNeighborAlltoallv(st, s.data(), sc.data(), sd.data(), MPI_INT, r.data(), rc.data(),
                                               rd.data(), MPI_INT, comm);
  Hull hs = hullOf(sb), hr = hullOf(rb);
  expectSpan(what, "alltoallv send", st, sl.send, hs, hs.data != hs.bytes);
  expectSpan(what, "alltoallv receive", st, sl.recv, hr, inNull || hr.data != hr.bytes);
}

// MPI_Neighbor_alltoallw: block i one int (even i) or one two-int type (odd i) at byte
// displacement 12 * i + 2.
void expectW(const char* what, MPI_Comm comm, int out, int in, bool inNull) {
  MPI_Datatype pair;
  MPI_Type_contiguous(2, MPI_INT, &pair);
  MPI_Type_commit(&pair);
  auto arrays = [&](int n, std::vector<int>& counts, std::vector<MPI_Aint>& displs, std::vector<MPI_Datatype>& types,
                    std::vector<std::pair<long, long>>& bl) {
    for (int i = 0; i < std::max(n, 1); ++i) {
      counts.push_back(1);
      displs.push_back(12 * i + 2);
      types.push_back(i % 2 ? pair : MPI_INT);
      if (i < n) bl.push_back({12L * i + 2, i % 2 ? 8L : 4L});
    }
  };
  std::vector<int> sc, rc;
  std::vector<MPI_Aint> sd, rd;
  std::vector<MPI_Datatype> stp, rtp;
  std::vector<std::pair<long, long>> sb, rb;
  arrays(out, sc, sd, stp, sb);
  arrays(in, rc, rd, rtp, rb);
  std::vector<int> s(64), r(64);
  coll::Staging st;
  coll::Slots sl = coll::planNeighborAlltoallw(st, s.data(), sc.data(), sd.data(), stp.data(), r.data(), rc.data(),
                                               rd.data(), rtp.data(), comm);
  Hull hs = hullOf(sb), hr = hullOf(rb);
  expectSpan(what, "alltoallw send", st, sl.send, hs, hs.data != hs.bytes);
  expectSpan(what, "alltoallw receive", st, sl.recv, hr, inNull || hr.data != hr.bytes);
  MPI_Type_free(&pair);
}

// Checks neighborsOf and the plans of MPI_Neighbor_alltoall, _alltoallv, _alltoallw and
// _allgather on `comm`.
void expectTopo(const char* what, MPI_Comm comm, int in, int out, bool inNull) {
  coll::Neighbors nb = coll::neighborsOf(comm);
  CHECK(nb.topology, "%s: rank %d: no topology found", what, me);
  CHECK(nb.in == in && nb.out == out, "%s: rank %d: degrees in %d out %d, expected %d and %d", what, me, nb.in,
        nb.out, in, out);
  CHECK(nb.inNull == inNull, "%s: rank %d: MPI_PROC_NULL in-neighbour %s, expected %s", what, me,
        nb.inNull ? "found" : "not found", inNull ? "one" : "none");

  std::vector<int> s(static_cast<std::size_t>(out * kCount + 1)), r(static_cast<std::size_t>(in * kCount + 1));
  coll::Staging st;
  coll::Slots sl = coll::planNeighborAlltoall(st, s.data(), kCount, MPI_INT, r.data(), kCount, MPI_INT, comm);
  CHECK((sl.send >= 0) == (out > 0), "%s: rank %d: alltoall send slot %d for out-degree %d", what, me, sl.send, out);
  CHECK((sl.recv >= 0) == (in > 0), "%s: rank %d: alltoall receive slot %d for in-degree %d", what, me, sl.recv, in);
  if (sl.send >= 0) {
    const base::Span& sp = st.span(sl.send);
    CHECK(sp.lo == 0 && sp.bytes == sizeof(int) * out * kCount && sp.contiguous,
          "%s: rank %d: alltoall send span lo %ld bytes %zu contiguous %d", what, me, static_cast<long>(sp.lo),
          sp.bytes, sp.contiguous);
  }
  if (sl.recv >= 0) {
    const base::Span& sp = st.span(sl.recv);
    CHECK(sp.lo == 0 && sp.bytes == sizeof(int) * in * kCount && sp.dataBytes == sp.bytes,
          "%s: rank %d: alltoall receive span lo %ld bytes %zu data %zu", what, me, static_cast<long>(sp.lo), sp.bytes,
          sp.dataBytes);
    CHECK(sp.contiguous == !inNull, "%s: rank %d: receive span %s copied in first", what, me,
          sp.contiguous ? "not" : "");
  }

  expectV(what, comm, out, in, inNull);
  expectW(what, comm, out, in, inNull);

  coll::Staging sg;
  sl = coll::planNeighborAllgather(sg, s.data(), kCount, MPI_INT, r.data(), kCount, MPI_INT, comm);
  CHECK((sl.send >= 0) == (out > 0), "%s: rank %d: allgather send slot %d for out-degree %d", what, me, sl.send, out);
  if (sl.send >= 0) CHECK(sg.span(sl.send).bytes == sizeof(int) * kCount, "%s: allgather send span", what);
  CHECK((sl.recv >= 0) == (in > 0), "%s: rank %d: allgather receive slot %d", what, me, sl.recv);
}

void cartesian() {
  for (int periodic = 0; periodic < 2; ++periodic) {
    MPI_Comm c;
    int dims[1] = {np}, periods[1] = {periodic};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &c);
    // A line has MPI_PROC_NULL beyond its ends; a ring has none.
    expectTopo(periodic ? "ring (Cartesian)" : "line (Cartesian)", c, 2, 2, !periodic && (me == 0 || me == np - 1));
    MPI_Comm_free(&c);
  }
  // A 3-D grid np x 1 x 1, periodic in the first dimension only: the other two have none.
  MPI_Comm c;
  int dims[3] = {np, 1, 1}, periods[3] = {1, 0, 0};
  MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &c);
  expectTopo("3-D grid", c, 6, 6, true);
  MPI_Comm_free(&c);
}

void graphs() {
  std::vector<int> index, edges;
  for (int q = 0; q < np; ++q) {
    edges.push_back((q + 1) % np);
    if (np > 2) edges.push_back((q + np - 1) % np);
    index.push_back(static_cast<int>(edges.size()));
  }
  MPI_Comm c;
  MPI_Graph_create(MPI_COMM_WORLD, np, index.data(), edges.data(), 0, &c);
  expectTopo("graph", c, np > 2 ? 2 : 1, np > 2 ? 2 : 1, false);
  MPI_Comm_free(&c);

  // Adjacent, weighted: rank 0 sends to every other rank and hears from none; the others send
  // to themselves and hear from 0 and themselves.
  std::vector<int> src, dst, w(static_cast<std::size_t>(np), 3);
  if (me == 0) {
    for (int q = 1; q < np; ++q) dst.push_back(q);
  } else {
    src = {0, me};
    dst = {me};
  }
  int dummy = 0;
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, static_cast<int>(src.size()), src.empty() ? &dummy : src.data(),
                                 w.data(), static_cast<int>(dst.size()), dst.data(), w.data(), MPI_INFO_NULL, 0, &c);
  expectTopo("distributed graph (adjacent, weighted)", c, me == 0 ? 0 : 2, me == 0 ? np - 1 : 1, false);
  MPI_Comm_free(&c);

  // General, unweighted: each rank declares its edge to the next (a ring); rank 0 also one to
  // every other rank, so those hear from two ranks (rank 1: 0 twice).
  std::vector<int> sources = {me}, degrees = {1}, dests = {(me + 1) % np};
  if (me == 0)
    for (int q = 1; q < np; ++q) {
      dests.push_back(q);
      ++degrees[0];
    }
  MPI_Dist_graph_create(MPI_COMM_WORLD, 1, sources.data(), degrees.data(), dests.data(), MPI_UNWEIGHTED,
                        MPI_INFO_NULL, 0, &c);
  expectTopo("distributed graph (general, unweighted)", c, me == 0 ? 1 : 2, me == 0 ? np : 1, false);
  MPI_Comm_free(&c);

  // Adjacent with an MPI_PROC_NULL source on rank 0 (MPICH accepts it and leaves that block alone;
  // Open MPI 4.1 makes the communicator but crashes in the collective, so none is called here).
  std::vector<int> from = {(me + np - 1) % np}, to = {(me + 1) % np};
  if (me == 0) from.insert(from.begin(), MPI_PROC_NULL);
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, static_cast<int>(from.size()), from.data(), MPI_UNWEIGHTED, 1,
                                 to.data(), MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
  expectTopo("distributed graph (an MPI_PROC_NULL source)", c, me == 0 ? 2 : 1, 1, me == 0);
  MPI_Comm_free(&c);
}

// No topology: nothing staged, the real MPI refuses the call.
void none() {
  coll::Neighbors nb = coll::neighborsOf(MPI_COMM_WORLD);
  CHECK(!nb.topology, "MPI_COMM_WORLD: rank %d: a topology found", me);
  int s[4], r[4];
  coll::Staging st;
  coll::Slots sl = coll::planNeighborAlltoall(st, s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD);
  CHECK(sl.send < 0 && sl.recv < 0, "MPI_COMM_WORLD: rank %d: slots %d and %d staged", me, sl.send, sl.recv);
}

int handlerCalls = 0;
void countingHandler(MPI_Comm*, int*, ...) { ++handlerCalls; }

// Arguments the MPI refuses stage nothing, and planning them calls no error handler (cgdr once
// asked the MPI for MPI_DATATYPE_NULL's extent, and read null arrays).
void refusedArguments() {
  MPI_Errhandler counting, before;
  MPI_Comm_create_errhandler(countingHandler, &counting);
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &before);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, counting);
  MPI_Comm ring;
  int dims[1] = {np}, periods[1] = {1};
  MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
  MPI_Comm_set_errhandler(ring, counting);
  handlerCalls = 0;
  std::vector<int> c(static_cast<std::size_t>(np) + 2, 1), d(c.size(), 0);
  std::vector<MPI_Aint> da(c.size(), 0);
  std::vector<MPI_Datatype> t(c.size(), MPI_INT);
  for (std::size_t i = 0; i < c.size(); ++i) d[i] = static_cast<int>(i);
  int s[64], r[64];
  const MPI_Comm w = MPI_COMM_WORLD;
  const MPI_Datatype none = MPI_DATATYPE_NULL;
  struct Plan {
    const char* what;
    coll::Slots (*plan)(coll::Staging&, int*, int*, const int*, const int*, const MPI_Aint*, const MPI_Datatype*,
                        MPI_Comm, MPI_Comm);
    bool sendStaged, recvStaged;
  };
  const Plan plans[] = {
      {"Alltoallv null send counts",
       [](coll::Staging& st, int* s, int* r, const int* c, const int* d, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm w, MPI_Comm) { return coll::planAlltoallv(st, s, nullptr, d, MPI_INT, r, c, d, MPI_INT, w); },
       false, true},
      {"Alltoallv null receive displacements",
       [](coll::Staging& st, int* s, int* r, const int* c, const int* d, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm w, MPI_Comm) { return coll::planAlltoallv(st, s, c, d, MPI_INT, r, c, nullptr, MPI_INT, w); },
       true, false},
      {"Alltoallv receive type MPI_DATATYPE_NULL",
       [](coll::Staging& st, int* s, int* r, const int* c, const int* d, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm w, MPI_Comm) {
         return coll::planAlltoallv(st, s, c, d, MPI_INT, r, c, d, MPI_DATATYPE_NULL, w);
       },
       true, false},
      {"Allgatherv null receive counts",
       [](coll::Staging& st, int* s, int* r, const int*, const int* d, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm w, MPI_Comm) { return coll::planAllgatherv(st, s, 1, MPI_INT, r, nullptr, d, MPI_INT, w); },
       true, false},
      {"Gatherv at the root, null displacements",
       [](coll::Staging& st, int* s, int* r, const int* c, const int*, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm w, MPI_Comm) {
         int me = 0;
         MPI_Comm_rank(w, &me);
         return coll::planGatherv(st, s, 1, MPI_INT, r, c, nullptr, MPI_INT, me, w);
       },
       true, false},
      {"Scatterv at the root, send type MPI_DATATYPE_NULL",
       [](coll::Staging& st, int* s, int* r, const int* c, const int* d, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm w, MPI_Comm) {
         int me = 0;
         MPI_Comm_rank(w, &me);
         return coll::planScatterv(st, s, c, d, MPI_DATATYPE_NULL, r, 1, MPI_INT, me, w);
       },
       false, true},
      {"Alltoallw null send types",
       [](coll::Staging& st, int* s, int* r, const int* c, const int* d, const MPI_Aint*, const MPI_Datatype* t,
          MPI_Comm w, MPI_Comm) { return coll::planAlltoallw(st, s, c, d, nullptr, r, c, d, t, w); },
       false, true},
      {"Reduce_scatter null counts",
       [](coll::Staging& st, int* s, int* r, const int*, const int*, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm w, MPI_Comm) { return coll::planReduceScatter(st, s, r, nullptr, MPI_INT, w); },
       false, false},
      {"Neighbor_alltoallv null receive counts",
       [](coll::Staging& st, int* s, int* r, const int* c, const int* d, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm, MPI_Comm ring) {
         return coll::planNeighborAlltoallv(st, s, c, d, MPI_INT, r, nullptr, d, MPI_INT, ring);
       },
       true, false},
      {"Neighbor_alltoallw null send displacements",
       [](coll::Staging& st, int* s, int* r, const int* c, const int*, const MPI_Aint* da, const MPI_Datatype* t,
          MPI_Comm, MPI_Comm ring) {
         return coll::planNeighborAlltoallw(st, s, c, nullptr, t, r, c, da, t, ring);
       },
       false, true},
      {"Neighbor_allgatherv receive type MPI_DATATYPE_NULL",
       [](coll::Staging& st, int* s, int* r, const int* c, const int* d, const MPI_Aint*, const MPI_Datatype*,
          MPI_Comm, MPI_Comm ring) {
         return coll::planNeighborAllgatherv(st, s, 1, MPI_INT, r, c, d, MPI_DATATYPE_NULL, ring);
       },
       true, false},
  };
  for (const Plan& p : plans) {
    coll::Staging st;
    coll::Slots sl = p.plan(st, s, r, c.data(), d.data(), da.data(), t.data(), w, ring);
    CHECK((sl.send >= 0) == p.sendStaged && (sl.recv >= 0) == p.recvStaged,
          "%s: rank %d: send slot %d, receive slot %d; expected the send buffer %s, the receive buffer %s", p.what,
          me, sl.send, sl.recv, p.sendStaged ? "staged" : "not staged", p.recvStaged ? "staged" : "not staged");
  }
  base::Span v = coll::spanV(2, c.data(), d.data(), none);
  CHECK(v.bytes == 0, "spanV of MPI_DATATYPE_NULL: %zu bytes", v.bytes);
  CHECK(handlerCalls == 0, "rank %d: planning refused arguments called the error handler %d times", me,
        handlerCalls);
  MPI_Comm_free(&ring);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, before);
  MPI_Errhandler_free(&before);
  MPI_Errhandler_free(&counting);
}

// MPI_Aint byte displacements: one beyond 2 GiB, no buffer touched (spans only).
void wideDisplacements() {
  int counts[2] = {1, 2};
  MPI_Aint displs[2] = {4, MPI_Aint{3} << 30};
  MPI_Datatype types[2] = {MPI_INT, MPI_INT};
  base::Span s = coll::spanW(2, counts, displs, types);
  CHECK(s.lo == 4 && s.bytes == (std::size_t{3} << 30) + 8 - 4 && s.dataBytes == 12 && !s.contiguous,
        "spanW with MPI_Aint displacements: lo %ld bytes %zu data %zu contiguous %d", static_cast<long>(s.lo), s.bytes,
        s.dataBytes, s.contiguous);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  cartesian();
  graphs();
  none();
  wideDisplacements();
  refusedArguments();
  int mine = plain_check::failures, all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) std::printf(all == 0 ? "PASS coll_plans\n" : "FAIL coll_plans (%d failures)\n", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
