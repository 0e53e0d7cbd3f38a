// Progress across the engine and the real MPI, with ranks waiting in different calls. Run with
// ranks 0 and 1 co-located and rank 2 remote (cgdr-pods -n 2 -r 2 --private-shm) or all local;
// every scenario is valid MPI and must complete:
//  1. rank 0 blocks in MPI_Recv from rank 2 while its pre-posted receive must answer rank 1's
//     rendezvous, which rank 1 needs before it sends what rank 2 waits for;
//  2. rank 0 blocks in a collective while rank 1 waits for its large Isend to rank 0;
//  3. as 1 with a small synchronous send;
//  4. MPI_ANY_SOURCE receives on a communicator with co-located and remote peers, posted before
//     receives from a specific remote peer: posting order decides, not arrival.
#include <cstring>
#include <vector>

#include "testlib.hpp"

namespace {
constexpr int kBig = 4 << 20;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  t::setup({{t::Kind::H, t::Kind::H}}, "progress");
  const int me = t::rank();
  if (t::size() < 3) {
    if (me == 0) std::printf("SKIP progress: needs 3 ranks\n");
    MPI_Finalize();
    return 77;
  }
  std::vector<char> big(kBig), small(64);
  for (int scenario = 1; scenario <= 3; ++scenario) {
    bool sync = scenario == 3;
    int n = sync ? 64 : kBig;
    char* buf = sync ? small.data() : big.data();
    int token = 7;
    if (me == 0) {
      MPI_Request r;
      std::memset(buf, 0, n);
      T_MPI(MPI_Irecv(buf, n, MPI_BYTE, 1, 10 + scenario, MPI_COMM_WORLD, &r));
      if (scenario == 2) {
        int in = 1, out = 0;
        T_MPI(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        T_CHECK(out == t::size(), "scenario 2: allreduce %d", out);
      } else {
        T_MPI(MPI_Recv(&token, 1, MPI_INT, 2, 20 + scenario, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        T_CHECK(token == 42, "scenario %d: token %d", scenario, token);
      }
      T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
      T_CHECK(buf[0] == static_cast<char>(scenario) && buf[n - 1] == static_cast<char>(scenario + 1),
              "scenario %d: data", scenario);
    } else if (me == 1) {
      std::memset(buf, scenario, n);
      buf[n - 1] = static_cast<char>(scenario + 1);
      if (scenario == 2) {
        MPI_Request r;
        T_MPI(MPI_Isend(buf, n, MPI_BYTE, 0, 10 + scenario, MPI_COMM_WORLD, &r));
        T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        int in = 1, out = 0;
        T_MPI(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
      } else {
        if (sync) T_MPI(MPI_Ssend(buf, n, MPI_BYTE, 0, 10 + scenario, MPI_COMM_WORLD));
        else T_MPI(MPI_Send(buf, n, MPI_BYTE, 0, 10 + scenario, MPI_COMM_WORLD));
        int go = 1;
        T_MPI(MPI_Send(&go, 1, MPI_INT, 2, 30 + scenario, MPI_COMM_WORLD));
      }
    } else if (me == 2) {
      if (scenario == 2) {
        int in = 1, out = 0;
        T_MPI(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
      } else {
        int go = 0, answer = 42;
        T_MPI(MPI_Recv(&go, 1, MPI_INT, 1, 30 + scenario, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        T_MPI(MPI_Send(&answer, 1, MPI_INT, 0, 20 + scenario, MPI_COMM_WORLD));
      }
    } else if (scenario == 2) {
      int in = 1, out = 0;
      T_MPI(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // Scenario 4: rank 0 posts ANY_SOURCE, then specific-from-2 receives; ranks 1 and 2 send.
  const int kTag = 50;
  if (me == 0) {
    int vals[4] = {-1, -1, -1, -1};
    MPI_Request r[4];
    MPI_Status st[4];
    T_MPI(MPI_Irecv(&vals[0], 1, MPI_INT, MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &r[0]));
    T_MPI(MPI_Irecv(&vals[1], 1, MPI_INT, 2, kTag, MPI_COMM_WORLD, &r[1]));
    T_MPI(MPI_Irecv(&vals[2], 1, MPI_INT, MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &r[2]));
    T_MPI(MPI_Irecv(&vals[3], 1, MPI_INT, 2, kTag, MPI_COMM_WORLD, &r[3]));
    int go = 1;
    T_MPI(MPI_Send(&go, 1, MPI_INT, 2, 60, MPI_COMM_WORLD));
    T_MPI(MPI_Waitall(4, r, st));
    // Rank 2 sends 200, 201 (in order); rank 1 sends 100 only after rank 2 is done.
    // Receives 0 and 1 see rank 2's messages first: 0 gets 200 (first posted), 1 gets 201.
    T_CHECK(vals[0] == 200 && st[0].MPI_SOURCE == 2, "wildcard 0 got %d from %d", vals[0], st[0].MPI_SOURCE);
    T_CHECK(vals[1] == 201, "specific 1 got %d (overtook the earlier wildcard?)", vals[1]);
    T_CHECK(vals[2] == 202 && vals[3] == 203, "later receives got %d, %d", vals[2], vals[3]);
    T_MPI(MPI_Send(&go, 1, MPI_INT, 1, 61, MPI_COMM_WORLD));
    int extra = 0;
    T_MPI(MPI_Recv(&extra, 1, MPI_INT, MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    T_CHECK(extra == 100, "rank 1's message %d", extra);
  } else if (me == 2) {
    int go;
    T_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int v : {200, 201, 202, 203}) T_MPI(MPI_Send(&v, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD));
  } else if (me == 1) {
    int go, v = 100;
    T_MPI(MPI_Recv(&go, 1, MPI_INT, 0, 61, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    T_MPI(MPI_Send(&v, 1, MPI_INT, 0, kTag, MPI_COMM_WORLD));
  }
  return t::finish("progress");
}
