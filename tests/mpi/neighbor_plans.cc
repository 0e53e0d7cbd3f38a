// What cgdr stages for a neighbourhood collective, without a GPU: coll::neighborsOf reads the
// in- and out-degree of Cartesian (periodic or not), graph and distributed graph topologies (made
// adjacent with weights, by MPI_Dist_graph_create without, or adjacent with an MPI_PROC_NULL
// source) and whether an in-neighbour is MPI_PROC_NULL; the plans make the receive span "copy in
// first" exactly then (the MPI leaves that block alone, so the staged mirror must hold the user's
// bytes), size both buffers from the degrees, stage nothing without a topology or for no
// neighbours, and the w-variant's MPI_Aint displacements beyond 2 GiB are not truncated. Expected
// degrees come from the ranks' own arithmetic, not from the MPI.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "coll/plans.hpp"
#include "coll/spans.hpp"
#include "plain_check.hpp"

using namespace cgdr;

namespace {

int me = 0, np = 0;
constexpr int kCount = 5;

// Checks neighborsOf and the plans of MPI_Neighbor_alltoall and _allgather on `comm`.
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
  int mine = plain_check::failures, all = 0;
  MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) std::printf(all == 0 ? "PASS neighbor_plans\n" : "FAIL neighbor_plans (%d failures)\n", all);
  MPI_Finalize();
  return all == 0 ? 0 : 1;
}
