// Back-pressure: rank 1 floods rank 0 with small messages nobody has asked for yet; rank 0 posts
// its receives only later. Unexpected-message memory must stay bounded (the sender switches to
// rendezvous once its eager credit is used: CGDR_STATS=1 prints the peak at MPI_Finalize), and
// every message must still arrive, in order, intact.
#include <unistd.h>

#include <vector>

#include "testlib.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  t::setup({{t::Kind::H, t::Kind::H}}, "flood");
  const int me = t::rank();
  const int kMsgs = 3000;
  const int kBytes = 4000;  // eager-sized: 12 MB in all, far more than the credit
  if (me == 1) {
    std::vector<std::vector<std::uint8_t>> bufs(kMsgs, std::vector<std::uint8_t>(kBytes));
    std::vector<MPI_Request> reqs(kMsgs);
    for (int i = 0; i < kMsgs; ++i) {
      for (int k = 0; k < kBytes; ++k) bufs[i][k] = t::pat(t::seedOf(1, i), k);
      T_MPI(MPI_Isend(bufs[i].data(), kBytes, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &reqs[i]));
    }
    T_MPI(MPI_Waitall(kMsgs, reqs.data(), MPI_STATUSES_IGNORE));
  } else if (me == 0) {
    usleep(300000);  // let the flood arrive first
    std::vector<std::uint8_t> b(kBytes);
    for (int i = 0; i < kMsgs; ++i) {
      T_MPI(MPI_Recv(b.data(), kBytes, MPI_BYTE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      for (int k = 0; k < kBytes; ++k)
        if (b[k] != t::pat(t::seedOf(1, i), k)) {
          T_CHECK(false, "message %d byte %d differs (order or data)", i, k);
          break;
        }
    }
  }
  return t::finish("flood");
}
