// Many live buffers used in turn (a ring of message buffers, PyTorch's cached blocks): buffer i
// of each side carries message i of every round, both directions, at a size of its own, so the
// same copies recur round after round - more of them than cgdr keeps copy graphs for
// (--buffers 80) or fewer (--buffers 40, repeated unchanged). Byte-exact, a pattern per rank,
// message and offset; the bytes after the message must keep the poison.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "testlib.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_buffers");
  const int me = t::rank();
  const int peer = me ^ 1;
  const int count = std::atoi(t::arg(argc, argv, "--buffers", "80").c_str());
  const int rounds = std::atoi(t::arg(argc, argv, "--rounds", "4").c_str());
  const std::size_t sizes[] = {1, 4093, 65543, 300001, (2u << 20) + 3, 8};
  auto sizeOf = [&](int i) { return sizes[i % 6]; };
  int msg = 0;
  if (peer < t::size()) {
    for (auto [sk, rk] : pairs) {
      // Each side's buffers for sending and for receiving, 64 bytes longer than their message.
      std::vector<std::unique_ptr<t::Buf>> out, in;
      for (int i = 0; i < count; ++i) {
        out.push_back(std::make_unique<t::Buf>(sk, sizeOf(i) + 64));
        in.push_back(std::make_unique<t::Buf>(rk, sizeOf(i) + 64));
      }
      for (int r = 0; r < rounds; ++r) {
        for (int i = 0; i < count; ++i) {
          std::size_t n = sizeOf(i);
          for (int dir = 0; dir < 2; ++dir) {
            ++msg;
            if ((me % 2) == dir) {
              out[i]->fill(t::seedOf(me, msg));
              MPI_Send(out[i]->ptr(), static_cast<int>(n), MPI_BYTE, peer, i, MPI_COMM_WORLD);
            } else {
              in[i]->poison();
              MPI_Status st;
              MPI_Recv(in[i]->ptr(), static_cast<int>(n), MPI_BYTE, peer, i, MPI_COMM_WORLD, &st);
              int got = -1;
              MPI_Get_count(&st, MPI_BYTE, &got);
              T_CHECK(got == static_cast<int>(n), "round %d buffer %d: count %d of %zu", r, i, got, n);
              char what[96];
              std::snprintf(what, sizeof what, "round %d buffer %d %s->%s n=%zu", r, i, t::name(sk), t::name(rk), n);
              in[i]->expect(t::seedOf(peer, msg), n, what);
            }
          }
        }
      }
      MPI_Barrier(MPI_COMM_WORLD);  // (the peer done with the buffers before they are freed)
    }
  }
  return t::finish("gpu_buffers");
}
