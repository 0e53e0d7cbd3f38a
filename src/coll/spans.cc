#include "coll/spans.hpp"

#include <algorithm>
#include <limits>
#include <vector>

namespace cgdr::coll {
namespace {

// Accumulates the union of covered byte ranges.
struct Hull {
  MPI_Aint lo = std::numeric_limits<MPI_Aint>::max();
  MPI_Aint hi = std::numeric_limits<MPI_Aint>::min();
  std::size_t data = 0;
  void add(MPI_Aint offset, const base::Span& s) {
    if (s.bytes == 0) return;
    lo = std::min(lo, offset + s.lo);
    hi = std::max(hi, offset + s.lo + static_cast<MPI_Aint>(s.bytes));
    data += s.dataBytes;
  }
  base::Span span() const {
    base::Span s;
    if (hi <= lo) return s;
    s.lo = lo;
    s.bytes = static_cast<std::size_t>(hi - lo);
    s.dataBytes = data;
    s.contiguous = data == s.bytes;  // exact only without overlap; false means "copy first"
    return s;
  }
};

}  // namespace

// Arguments the real MPI refuses (null arrays, MPI_DATATYPE_NULL) give an empty span: nothing is
// staged, no MPI query raises an error of its own, and the real MPI reports the call once.
base::Span spanV(int n, const int counts[], const int displs[], MPI_Datatype type) {
  if (n > 0 && (!counts || !displs)) return {};
  if (type == MPI_DATATYPE_NULL) return {};
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  Hull h;
  for (int i = 0; i < n; ++i) h.add(static_cast<MPI_Aint>(displs[i]) * extent, base::spanOf(counts[i], type));
  return h.span();
}

template <class Displ>
base::Span spanWOf(int n, const int counts[], const Displ displs[], const MPI_Datatype types[]) {
  if (n > 0 && (!counts || !displs || !types)) return {};
  Hull h;
  for (int i = 0; i < n; ++i) h.add(static_cast<MPI_Aint>(displs[i]), base::spanOf(counts[i], types[i]));
  return h.span();
}

base::Span spanW(int n, const int counts[], const int displs[], const MPI_Datatype types[]) {
  return spanWOf(n, counts, displs, types);
}

base::Span spanW(int n, const int counts[], const MPI_Aint displs[], const MPI_Datatype types[]) {
  return spanWOf(n, counts, displs, types);
}

base::Span spanBlocks(int n, int count, MPI_Datatype type) {
  return base::spanOf(static_cast<long long>(n) * count, type);
}

long long sum(int n, const int counts[]) {
  long long s = 0;
  if (!counts) return 0;
  for (int i = 0; i < n; ++i) s += counts[i];
  return s;
}

RootRole rootRole(MPI_Comm comm, int root) {
  int inter = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    if (root == MPI_ROOT) return RootRole::kRoot;
    if (root == MPI_PROC_NULL) return RootRole::kNone;
    return RootRole::kNonRoot;
  }
  int me = 0;
  PMPI_Comm_rank(comm, &me);
  return me == root ? RootRole::kRoot : RootRole::kNonRoot;
}

int peerCount(MPI_Comm comm) {
  int inter = 0, n = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) PMPI_Comm_remote_size(comm, &n);
  else PMPI_Comm_size(comm, &n);
  return n;
}

Neighbors neighborsOf(MPI_Comm comm) {
  Neighbors nb;
  int kind = MPI_UNDEFINED;
  if (PMPI_Topo_test(comm, &kind) != MPI_SUCCESS) return nb;
  if (kind == MPI_CART) {
    int dims = 0;
    PMPI_Cartdim_get(comm, &dims);
    nb.topology = true;
    nb.in = nb.out = 2 * dims;
    for (int d = 0; d < dims; ++d) {
      int source = MPI_PROC_NULL, dest = MPI_PROC_NULL;
      PMPI_Cart_shift(comm, d, 1, &source, &dest);
      nb.inNull = nb.inNull || source == MPI_PROC_NULL || dest == MPI_PROC_NULL;
    }
  } else if (kind == MPI_GRAPH) {
    int me = 0;
    PMPI_Comm_rank(comm, &me);
    PMPI_Graph_neighbors_count(comm, me, &nb.in);
    nb.topology = true;
    nb.out = nb.in;
  } else if (kind == MPI_DIST_GRAPH) {
    int weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &nb.in, &nb.out, &weighted);
    nb.topology = true;
    // One element at least: no null arrays for a degree of 0.
    std::vector<int> sources(static_cast<std::size_t>(std::max(nb.in, 1))), sw(sources.size());
    std::vector<int> dests(static_cast<std::size_t>(std::max(nb.out, 1))), dw(dests.size());
    PMPI_Dist_graph_neighbors(comm, nb.in, sources.data(), sw.data(), nb.out, dests.data(), dw.data());
    nb.inNull = std::find(sources.begin(), sources.begin() + nb.in, MPI_PROC_NULL) != sources.begin() + nb.in;
  }
  return nb;
}

}  // namespace cgdr::coll
