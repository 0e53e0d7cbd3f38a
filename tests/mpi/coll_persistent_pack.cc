// Persistent collectives (where the MPI offers them), started repeatedly with new inputs;
// MPI_Pack/Unpack and their external32 forms with GPU buffers on both sides (a null position
// refused in each); and collectives on an intercommunicator (MPI_ROOT / MPI_PROC_NULL roots).
#include <mpi-ext.h>

#include "coll_common.hpp"

namespace {

using V = std::vector<std::int32_t>;
int me, np;

#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ) && OMPI_HAVE_MPI_EXT_PCOLLREQ
#define PCOLL(name) MPIX_##name##_init
#elif MPI_VERSION >= 4
#define PCOLL(name) MPI_##name##_init
#endif

void persistent(t::Kind sk, t::Kind rk, int n) {
#ifdef PCOLL
  ct::TBuf<std::int32_t> s(sk, n), r(rk, n), b(me == 0 ? sk : rk, n);
  MPI_Request reqs[2];
  T_MPI(PCOLL(Allreduce)(s.ptr(), r.ptr(), n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
  T_MPI(PCOLL(Bcast)(b.ptr(), n, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
  for (int round = 0; round < 4; ++round) {
    int tag = 500 + round;
    s.set(ct::input(me, tag, n));
    if (me == 0) b.set(ct::input(0, tag + 50, n));
    T_MPI(MPI_Startall(2, reqs));
    T_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    V sum(n, 0);
    for (int q = 0; q < np; ++q) {
      auto in = ct::input(q, tag, n);
      for (int i = 0; i < n; ++i) sum[i] += in[i];
    }
    ct::same(r.get(), sum, "persistent Allreduce");
    ct::same(b.get(), ct::input(0, tag + 50, n), "persistent Bcast");
    T_CHECK(reqs[0] != MPI_REQUEST_NULL, "persistent collective request freed by Waitall");
  }
  MPI_Request_free(&reqs[0]);
  MPI_Request_free(&reqs[1]);
#else
  if (me == 0 && n == 1) std::printf("NOTE: this MPI has no persistent collectives; not tested\n");
#endif
}

void pack(t::Kind sk, t::Kind rk) {
  MPI_Datatype vec;
  MPI_Type_vector(100, 3, 5, MPI_INT, &vec);
  MPI_Type_commit(&vec);
  const int span = 99 * 5 + 3;
  ct::TBuf<std::int32_t> data(sk, span), out(rk, span);
  auto src = ct::input(me, 900, span);
  data.set(src);
  out.set(V(span, -4));
  int psize = 0;
  MPI_Pack_size(2, vec, MPI_COMM_WORLD, &psize);
  t::Buf packed(rk, psize + 64);
  packed.poison();
  int pos = 8;  // pack after an 8-byte header that must survive
  T_MPI(MPI_Pack(data.ptr(), 1, vec, packed.ptr(), psize + 64, &pos, MPI_COMM_WORLD));
  T_CHECK(pos == 8 + 1200, "Pack position %d", pos);
  auto bytes = packed.get();
  for (int i = 0; i < 8; ++i) T_CHECK(bytes[i] == 0xA5, "Pack overwrote header byte %d", i);
  int upos = 8;
  T_MPI(MPI_Unpack(packed.ptr(), psize + 64, &upos, out.ptr(), 1, vec, MPI_COMM_WORLD));
  V want(span, -4);
  for (int b = 0; b < 100; ++b)
    for (int k = 0; k < 3; ++k) want[b * 5 + k] = src[b * 5 + k];
  ct::same(out.get(), want, "Pack/Unpack vector");
  // external32: big-endian on the wire; round trip must give the data back.
  MPI_Aint esize = 0, epos = 0, eupos = 0;
  MPI_Pack_external_size("external32", 1, vec, &esize);
  t::Buf ext(sk, esize);
  out.set(V(span, -4));
  T_MPI(MPI_Pack_external("external32", data.ptr(), 1, vec, ext.ptr(), esize, &epos));
  T_MPI(MPI_Unpack_external("external32", ext.ptr(), esize, &eupos, out.ptr(), 1, vec));
  T_CHECK(epos == esize && eupos == esize, "external32 positions %ld %ld of %ld", static_cast<long>(epos),
          static_cast<long>(eupos), static_cast<long>(esize));
  ct::same(out.get(), want, "Pack_external/Unpack_external");
  // A null position is an MPI_ERR_ARG in every form (the GPU buffers change nothing).
  MPI_Errhandler before;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &before);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const struct {
    const char* what;
    int rc;
  } nullPos[] = {
      {"Pack", MPI_Pack(data.ptr(), 1, vec, packed.ptr(), psize + 64, nullptr, MPI_COMM_WORLD)},
      {"Unpack", MPI_Unpack(packed.ptr(), psize + 64, nullptr, out.ptr(), 1, vec, MPI_COMM_WORLD)},
      {"Pack_external", MPI_Pack_external("external32", data.ptr(), 1, vec, ext.ptr(), esize, nullptr)},
      {"Unpack_external", MPI_Unpack_external("external32", ext.ptr(), esize, nullptr, out.ptr(), 1, vec)},
  };
  for (const auto& c : nullPos) {
    int cls = c.rc == MPI_SUCCESS ? -1 : t::errorClass(c.rc);
    T_CHECK(c.rc != MPI_SUCCESS && cls == MPI_ERR_ARG, "%s with a null position (%s->%s): returned %d, class %d",
            c.what, t::name(sk), t::name(rk), c.rc, cls);
  }
  ct::same(out.get(), want, "the buffer after the refused unpacks");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, before);
  MPI_Errhandler_free(&before);
  auto eb = ext.get();
  T_CHECK(eb.size() >= 4 && eb[3] == static_cast<std::uint8_t>(src[0] & 0xff) &&
              eb[0] == static_cast<std::uint8_t>((static_cast<std::uint32_t>(src[0]) >> 24) & 0xff),
          "external32 is not big-endian");
  MPI_Type_free(&vec);
}

void intercomm(t::Kind sk, t::Kind rk, int n) {
  if (np < 2) return;
  MPI_Comm local, inter;
  int color = me % 2;
  MPI_Comm_split(MPI_COMM_WORLD, color, me, &local);
  MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 77, &inter);
  int lrank = 0, rsize = 0;
  MPI_Comm_rank(local, &lrank);
  MPI_Comm_remote_size(inter, &rsize);
  // Bcast from group 0's first process to group 1.
  ct::TBuf<std::int32_t> b(color == 0 ? sk : rk, n);
  int root = color == 0 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  b.set(color == 0 && lrank == 0 ? ct::input(0, 71, n) : V(n, -1));
  T_MPI(MPI_Bcast(b.ptr(), n, MPI_INT, root, inter));
  if (color == 1) ct::same(b.get(), ct::input(0, 71, n), "intercomm Bcast");
  // Allreduce: each group gets the sum of the other group.
  ct::TBuf<std::int32_t> s(sk, n), r(rk, n);
  s.set(ct::input(me, 72, n));
  T_MPI(MPI_Allreduce(s.ptr(), r.ptr(), n, MPI_INT, MPI_SUM, inter));
  V want(n, 0);
  for (int q = 0; q < np; ++q) {
    if (q % 2 == color) continue;
    auto in = ct::input(q, 72, n);
    for (int i = 0; i < n; ++i) want[i] += in[i];
  }
  ct::same(r.get(), want, "intercomm Allreduce");
  // Gather to group 1's first process from group 0.
  ct::TBuf<std::int32_t> g(rk, static_cast<std::size_t>(n) * rsize);
  int groot = color == 1 ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
  T_MPI(MPI_Gather(s.ptr(), n, MPI_INT, g.ptr(), n, MPI_INT, groot, inter));
  if (groot == MPI_ROOT) {
    V gw;
    for (int q = 0; q < np; q += 2) {
      auto in = ct::input(q, 72, n);
      gw.insert(gw.end(), in.begin(), in.end());
    }
    ct::same(g.get(), gw, "intercomm Gather");
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "coll_persistent_pack");
  me = t::rank();
  np = t::size();
  for (auto pair : pairs) {
    auto [sk, rk] = ct::kindsFor(me, pair);
    for (int n : {1, 4095, 300001}) {
      persistent(sk, rk, n);
      intercomm(sk, rk, n);
    }
    pack(sk, rk);
  }
  return t::finish("coll_persistent_pack");
}
