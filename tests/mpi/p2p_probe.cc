// Probe, Iprobe, Mprobe, Improbe, Mrecv and Imrecv: the probed status (source, tag, count) is the
// one the receive then gets, and matched receives land byte-exact in every buffer kind.
#include "testlib.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_probe");
  const int me = t::rank();
  int msg = 0;
  for (auto [sk, rk] : pairs) {
    for (std::size_t n : t::sizes(argc, argv)) {
      for (int variant = 0; variant < 4; ++variant) {
        ++msg;
        const int tag = 300 + variant;
        if (me == 0) {
          t::Buf b(sk, n);
          b.fill(t::seedOf(0, msg));
          T_MPI(MPI_Send(b.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD));
        } else if (me == 1) {
          t::Buf b(rk, n + 8);
          MPI_Status ps, rs;
          int count = -1;
          if (variant == 0) {  // Probe + Recv
            T_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &ps));
            MPI_Get_count(&ps, MPI_BYTE, &count);
            T_MPI(MPI_Recv(b.ptr(), count, MPI_BYTE, ps.MPI_SOURCE, ps.MPI_TAG, MPI_COMM_WORLD, &rs));
          } else if (variant == 1) {  // Iprobe loop + Irecv
            int flag = 0;
            while (!flag) T_MPI(MPI_Iprobe(0, tag, MPI_COMM_WORLD, &flag, &ps));
            MPI_Get_count(&ps, MPI_BYTE, &count);
            MPI_Request r;
            T_MPI(MPI_Irecv(b.ptr(), count, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r));
            T_MPI(MPI_Wait(&r, &rs));
          } else if (variant == 2) {  // Mprobe + Mrecv
            MPI_Message m;
            T_MPI(MPI_Mprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &ps));
            MPI_Get_count(&ps, MPI_BYTE, &count);
            T_MPI(MPI_Mrecv(b.ptr(), count, MPI_BYTE, &m, &rs));
            T_CHECK(m == MPI_MESSAGE_NULL, "Mrecv did not consume the message handle");
          } else {  // Improbe + Imrecv
            MPI_Message m;
            int flag = 0;
            while (!flag) T_MPI(MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &m, &ps));
            MPI_Get_count(&ps, MPI_BYTE, &count);
            MPI_Request r;
            T_MPI(MPI_Imrecv(b.ptr(), count, MPI_BYTE, &m, &r));
            T_MPI(MPI_Wait(&r, &rs));
          }
          T_CHECK(count == static_cast<int>(n), "probe variant %d n=%zu: probed count %d", variant, n, count);
          T_CHECK(ps.MPI_SOURCE == 0 && ps.MPI_TAG == tag, "probe variant %d: source %d tag %d", variant,
                  ps.MPI_SOURCE, ps.MPI_TAG);
          int rc = -1;
          MPI_Get_count(&rs, MPI_BYTE, &rc);
          T_CHECK(rc == count && rs.MPI_TAG == tag, "probe variant %d: receive status count %d tag %d",
                  variant, rc, rs.MPI_TAG);
          char what[64];
          snprintf(what, sizeof what, "probe variant %d %s->%s n=%zu", variant, t::name(sk), t::name(rk), n);
          b.expect(t::seedOf(0, msg), n, what);
        }
      }
    }
  }
  // Probing MPI_PROC_NULL answers at once with the null status.
  MPI_Status st;
  T_MPI(MPI_Probe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
  T_CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "probe of MPI_PROC_NULL: source %d", st.MPI_SOURCE);
  return t::finish("p2p_probe");
}
