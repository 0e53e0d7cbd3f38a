// Buffers freed and allocated again between messages (often at the same address): every message
// must carry the new buffer's bytes, never those of a stale mapping (the IPC handle cache is
// validated by buffer id, zero-copy shares are keyed per allocation). Both directions, sizes that
// take different channels, byte-exact with a pattern per rank, message and offset.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "testlib.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_realloc");
  const int me = t::rank();
  const int peer = me ^ 1;
  const int rounds = std::atoi(t::arg(argc, argv, "--rounds", "12").c_str());
  const std::size_t sizes[] = {1, 4093, 300001, (5u << 20) + 3};
  int msg = 0;
  if (peer < t::size()) {
    for (auto [sk, rk] : pairs) {
      for (int r = 0; r < rounds; ++r) {
        std::size_t n = sizes[r % 4];
        for (int dir = 0; dir < 2; ++dir) {
          ++msg;
          bool sender = (me % 2) == dir;
          // A fresh buffer per message on both sides, freed right after.
          auto buf = std::make_unique<t::Buf>(sender ? sk : rk, n);
          if (sender) {
            buf->fill(t::seedOf(me, msg));
            MPI_Send(buf->ptr(), static_cast<int>(n), MPI_BYTE, peer, msg, MPI_COMM_WORLD);
          } else {
            MPI_Status st;
            MPI_Recv(buf->ptr(), static_cast<int>(n), MPI_BYTE, peer, msg, MPI_COMM_WORLD, &st);
            int count = -1;
            MPI_Get_count(&st, MPI_BYTE, &count);
            T_CHECK(count == static_cast<int>(n), "round %d: count %d of %zu", r, count, n);
            char what[96];
            std::snprintf(what, sizeof what, "round %d %s->%s n=%zu", r, t::name(sk), t::name(rk), n);
            buf->expect(t::seedOf(peer, msg), n, what);
          }
          // Keep sender and receiver in step so the next allocation follows the free.
          MPI_Barrier(MPI_COMM_WORLD);
        }
      }
    }
  }
  return t::finish("gpu_realloc");
}
