// Point-to-point on communicators other than MPI_COMM_WORLD, one made by each creating call cgdr
// intercepts, plus one by MPI_Comm_idup (left to the real MPI on every member):
//   ring:      on each, every rank sends to its right neighbour in the communicator's ranks and
//              receives from its left (0 and 1 bytes, the communicator's own size, a large one);
//              the status names the sender's rank in that communicator, the data its world rank
//              (found through the groups, never assumed equal to the world rank).
//   isolation: each rank sends one message with the same tag on every communicator, last made
//              first, then probes and receives MPI_ANY_SOURCE / MPI_ANY_TAG on each, first made
//              first: each gets its own communicator's message.
//   reuse:     rounds of create, exchange with wildcards, free, while a message with the same tag
//              on a long-lived duplicate stays unreceived: no round takes it.
// Rank 0 prints each communicator's own message size (16 << i) + 1, one size class each, so that
// comms.sh can tell from CGDR_STATS which communicators cgdr's engine served.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "testlib.hpp"

namespace {

struct Comm {
  std::string name;
  MPI_Comm c = MPI_COMM_NULL;
};

std::size_t ownSize(std::size_t i) { return (std::size_t{16} << i) + 1; }
const std::size_t kLarge = 2 * t::kBlock + 3;

int worldRankOf(MPI_Comm c, int r) {
  MPI_Group g, wg;
  MPI_Comm_group(c, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int w = MPI_UNDEFINED;
  MPI_Group_translate_ranks(g, 1, &r, wg, &w);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  return w;
}

struct Ring {
  int rank = 0, size = 1, right = 0, left = 0, leftWorld = 0;
};
Ring ringOf(MPI_Comm c) {
  Ring r;
  MPI_Comm_rank(c, &r.rank);
  MPI_Comm_size(c, &r.size);
  r.right = (r.rank + 1) % r.size;
  r.left = (r.rank + r.size - 1) % r.size;
  r.leftWorld = worldRankOf(c, r.left);
  return r;
}

std::vector<Comm> makeComms() {
  const int me = t::rank(), n = t::size();
  MPI_Comm w = MPI_COMM_WORLD;
  std::vector<Comm> v;
  auto add = [&](const char* name, MPI_Comm c) {
    T_CHECK(c != MPI_COMM_NULL, "%s: no communicator", name);
    if (c != MPI_COMM_NULL) v.push_back({name, c});
  };
  MPI_Comm c = MPI_COMM_NULL;
  T_MPI(MPI_Comm_dup(w, &c));
  add("dup", c);
  T_MPI(MPI_Comm_dup_with_info(w, MPI_INFO_NULL, &c));
  add("dup_with_info", c);
  T_MPI(MPI_Comm_split(w, 0, n - me, &c));  // ranks reversed
  add("split_reversed", c);
  T_MPI(MPI_Comm_split(w, me % 2, me, &c));  // at 2 ranks, communicators of one rank each
  add("split_parity", c);
  T_MPI(MPI_Comm_split_type(w, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c));
  add("split_type", c);
  MPI_Group wg, rev;
  MPI_Comm_group(w, &wg);
  std::vector<int> reversed(n);
  for (int i = 0; i < n; ++i) reversed[i] = n - 1 - i;
  MPI_Group_incl(wg, n, reversed.data(), &rev);
  T_MPI(MPI_Comm_create(w, rev, &c));
  add("create", c);
  T_MPI(MPI_Comm_create_group(w, rev, 3, &c));
  add("create_group", c);
  MPI_Group_free(&rev);
  MPI_Group_free(&wg);
  {
    int dims[1] = {n}, periods[1] = {1};
    T_MPI(MPI_Cart_create(w, 1, dims, periods, 1, &c));
    add("cart", c);
  }
  {
    int dims[2] = {n, 1}, periods[2] = {0, 0}, remain[2] = {1, 0};
    MPI_Comm plane = MPI_COMM_NULL;
    T_MPI(MPI_Cart_create(w, 2, dims, periods, 0, &plane));
    T_MPI(MPI_Cart_sub(plane, remain, &c));
    add("cart_sub", c);
    if (plane != MPI_COMM_NULL) MPI_Comm_free(&plane);
  }
  if (n >= 2) {  // the even and the odd ranks, joined through an intercommunicator
    MPI_Comm half = MPI_COMM_NULL, inter = MPI_COMM_NULL;
    const int color = me % 2;
    T_MPI(MPI_Comm_split(w, color, me, &half));
    T_MPI(MPI_Intercomm_create(half, 0, w, 1 - color, 11, &inter));
    T_MPI(MPI_Intercomm_merge(inter, color, &c));
    add("intercomm_merge", c);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
  }
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  {
    std::vector<int> index(n), edges(n);
    for (int i = 0; i < n; ++i) index[i] = i + 1, edges[i] = (i + 1) % n;
    T_MPI(MPI_Graph_create(w, n, index.data(), edges.data(), 0, &c));
    add("graph", c);
  }
  {
    int src[1] = {me}, deg[1] = {1}, dst[1] = {right};
    T_MPI(MPI_Dist_graph_create(w, 1, src, deg, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c));
    add("dist_graph", c);
  }
  {
    int src[1] = {left}, dst[1] = {right};
    T_MPI(MPI_Dist_graph_create_adjacent(w, 1, src, MPI_UNWEIGHTED, 1, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, 1, &c));
    add("dist_graph_adjacent", c);
  }
  {
    MPI_Request r = MPI_REQUEST_NULL;
    T_MPI(MPI_Comm_idup(w, &c, &r));
    T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    add("idup", c);
  }
  if (me == 0)
    for (std::size_t i = 0; i < v.size(); ++i) std::printf("comm %s: own size %zu\n", v[i].name.c_str(), ownSize(i));
  return v;
}

void ring(const Comm& c, int i, t::Kind sk, t::Kind rk) {
  const Ring g = ringOf(c.c);
  const std::size_t sizes[] = {0, 1, ownSize(i), kLarge};
  for (int k = 0; k < 4; ++k) {
    const std::size_t n = sizes[k];
    const std::string what = c.name + " ring, " + std::to_string(n) + " B";
    t::Buf out(sk, n), in(rk, n + 64);
    out.fill(t::seedOf(t::rank(), i, k));
    in.poison();
    const int tag = 100 + k, src = k % 2 ? MPI_ANY_SOURCE : g.left;  // one sender per tag
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    T_MPI(MPI_Irecv(in.ptr(), static_cast<int>(n), MPI_BYTE, src, tag, c.c, &r));
    T_MPI(MPI_Send(out.ptr(), static_cast<int>(n), MPI_BYTE, g.right, tag, c.c));
    T_MPI(MPI_Wait(&r, &st));
    t::checkStatus(st, g.left, tag, n, what.c_str());
    in.expect(t::seedOf(g.leftWorld, i, k), n, what.c_str());
  }
}

void isolation(const std::vector<Comm>& cs, t::Kind sk, t::Kind rk) {
  const int tag = 7, msg = 1000;
  std::vector<std::unique_ptr<t::Buf>> outs(cs.size());
  std::vector<MPI_Request> rs(cs.size(), MPI_REQUEST_NULL);
  for (std::size_t i = cs.size(); i-- > 0;) {
    const Ring g = ringOf(cs[i].c);
    outs[i] = std::make_unique<t::Buf>(sk, ownSize(i));
    outs[i]->fill(t::seedOf(t::rank(), static_cast<int>(i), msg));
    T_MPI(MPI_Isend(outs[i]->ptr(), static_cast<int>(ownSize(i)), MPI_BYTE, g.right, tag, cs[i].c, &rs[i]));
  }
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const Ring g = ringOf(cs[i].c);
    const std::string what = cs[i].name + " isolation";
    MPI_Status st;
    T_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, cs[i].c, &st));
    t::checkStatus(st, g.left, tag, ownSize(i), (what + " (probe)").c_str());
    const std::size_t room = ownSize(cs.size());  // room for any communicator's message
    t::Buf in(rk, room);
    in.poison();
    T_MPI(MPI_Recv(in.ptr(), static_cast<int>(room), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, cs[i].c, &st));
    t::checkStatus(st, g.left, tag, ownSize(i), what.c_str());
    in.expect(t::seedOf(g.leftWorld, static_cast<int>(i), msg), ownSize(i), what.c_str());
  }
  T_MPI(MPI_Waitall(static_cast<int>(rs.size()), rs.data(), MPI_STATUSES_IGNORE));
}

void reuse(t::Kind sk, t::Kind rk, int rounds) {
  const int me = t::rank(), n = t::size(), tag = 5, msg = 2000;
  const std::size_t bytes = 5;
  MPI_Comm keep = MPI_COMM_NULL;
  T_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &keep));
  const Ring kg = ringOf(keep);
  t::Buf held(sk, bytes);
  held.fill(t::seedOf(me, msg));
  MPI_Request hr = MPI_REQUEST_NULL;
  T_MPI(MPI_Isend(held.ptr(), static_cast<int>(bytes), MPI_BYTE, kg.right, tag, keep, &hr));
  MPI_Group wg;
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  for (int round = 0; round < rounds; ++round) {
    MPI_Comm d = MPI_COMM_NULL;
    if (round % 3 == 0) T_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    if (round % 3 == 1) T_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, (me + round) % n, &d));
    if (round % 3 == 2) T_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, wg, round, &d));
    if (d == MPI_COMM_NULL) {
      T_CHECK(false, "reuse round %d: no communicator", round);
      break;
    }
    const Ring g = ringOf(d);
    const std::string what = "reuse round " + std::to_string(round);
    t::Buf out(sk, bytes), in(rk, bytes + 8);
    out.fill(t::seedOf(me, msg + 1 + round));
    in.poison();
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    T_MPI(MPI_Irecv(in.ptr(), static_cast<int>(bytes + 8), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, d, &r));
    T_MPI(MPI_Send(out.ptr(), static_cast<int>(bytes), MPI_BYTE, g.right, tag, d));
    T_MPI(MPI_Wait(&r, &st));
    t::checkStatus(st, g.left, tag, bytes, what.c_str());
    in.expect(t::seedOf(g.leftWorld, msg + 1 + round), bytes, what.c_str());
    T_MPI(MPI_Comm_free(&d));
    T_CHECK(d == MPI_COMM_NULL, "%s: MPI_Comm_free left the handle set", what.c_str());
  }
  MPI_Group_free(&wg);
  t::Buf in(rk, bytes + 8);
  in.poison();
  MPI_Status st;
  T_MPI(MPI_Recv(in.ptr(), static_cast<int>(bytes + 8), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, keep, &st));
  t::checkStatus(st, kg.left, tag, bytes, "the long-lived duplicate's message");
  in.expect(t::seedOf(kg.leftWorld, msg), bytes, "the long-lived duplicate's message");
  T_MPI(MPI_Wait(&hr, MPI_STATUS_IGNORE));
  T_MPI(MPI_Comm_free(&keep));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_comms");
  const int rounds = std::stoi(t::arg(argc, argv, "--rounds", "30"));
  std::vector<Comm> cs = makeComms();
  for (auto [sk, rk] : pairs) {
    for (std::size_t i = 0; i < cs.size(); ++i) ring(cs[i], static_cast<int>(i), sk, rk);
    isolation(cs, sk, rk);
    reuse(sk, rk, rounds);
  }
  for (auto& c : cs) {
    T_MPI(MPI_Comm_free(&c.c));
    T_CHECK(c.c == MPI_COMM_NULL, "%s: MPI_Comm_free left the handle set", c.name.c_str());
  }
  return t::finish("p2p_comms");
}
