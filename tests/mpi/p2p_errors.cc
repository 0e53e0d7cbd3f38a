// Errors: truncation reported as MPI_ERR_TRUNCATE with MPI_ERRORS_RETURN (and nothing written past
// the buffer), cancelled receives, cancel of sends where the MPI allows it, and - with GPUs - a
// freed or foreign device pointer reported as an MPI error naming the cause instead of a crash.
#include <cstdlib>
#include <cstring>

#include "testlib.hpp"
#include <mpi-ext.h>

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

static_assert(MPIX_CUDA_AWARE_SUPPORT == 1, "cgdr's mpi-ext.h must be the one included");

namespace {

int errClass(int rc) {
  int c = -1;
  MPI_Error_class(rc, &c);
  return c;
}

void truncation(t::Kind sk, t::Kind rk, int msg) {
  const std::size_t sent = 1000, room = 500;
  if (t::rank() == 0) {
    t::Buf b(sk, sent);
    b.fill(t::seedOf(0, msg));
    T_MPI(MPI_Send(b.ptr(), sent, MPI_BYTE, 1, 40, MPI_COMM_WORLD));
    T_MPI(MPI_Send(b.ptr(), sent, MPI_BYTE, 1, 41, MPI_COMM_WORLD));
  } else if (t::rank() == 1) {
    t::Buf b(rk, room + 64);
    MPI_Status st;
    int rc = MPI_Recv(b.ptr(), room, MPI_BYTE, 0, 40, MPI_COMM_WORLD, &st);
    T_CHECK(errClass(rc) == MPI_ERR_TRUNCATE, "blocking truncation: error class %d", errClass(rc));
    auto v = b.get();
    for (std::size_t i = room; i < v.size(); ++i) {
      if (v[i] != 0xA5) {
        T_CHECK(false, "truncated receive wrote byte %zu past the buffer", i);
        break;
      }
    }
    MPI_Request r;
    T_MPI(MPI_Irecv(b.ptr(), room, MPI_BYTE, 0, 41, MPI_COMM_WORLD, &r));
    rc = MPI_Wait(&r, &st);
    T_CHECK(errClass(rc) == MPI_ERR_TRUNCATE, "non-blocking truncation: error class %d", errClass(rc));
  }
}

void cancelRecv(t::Kind rk) {
  t::Buf b(rk, 4096);
  MPI_Request r;
  T_MPI(MPI_Irecv(b.ptr(), 4096, MPI_BYTE, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &r));
  T_MPI(MPI_Cancel(&r));
  MPI_Status st;
  T_MPI(MPI_Wait(&r, &st));
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  T_CHECK(cancelled, "cancelled receive (%s) not reported as cancelled", t::name(rk));
  T_CHECK(r == MPI_REQUEST_NULL, "cancelled request not freed");
}

// A send nobody has posted a receive for is cancelled; where the MPI cannot cancel it (Open MPI
// cannot cancel sends), the peer must be able to receive it while the sender waits.
void cancelSend(t::Kind sk) {
  const int n = 64 << 10;
  if (t::rank() == 0) {
    t::Buf b(sk, n);
    b.fill(t::seedOf(0, 4343));
    MPI_Request r;
    T_MPI(MPI_Isend(b.ptr(), n, MPI_BYTE, 1, 4343, MPI_COMM_WORLD, &r));
    T_MPI(MPI_Cancel(&r));
    MPI_Status st;
    T_MPI(MPI_Wait(&r, &st));
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    T_MPI(MPI_Send(&cancelled, 1, MPI_INT, 1, 4344, MPI_COMM_WORLD));
  } else if (t::rank() == 1) {
    bool got = false;
    int cancelled = -1;
    while (cancelled < 0 || (!cancelled && !got)) {
      int flag = 0;
      MPI_Status st;
      if (!got) T_MPI(MPI_Iprobe(0, 4343, MPI_COMM_WORLD, &flag, &st));
      if (flag) {
        t::Buf b(t::Kind::H, n);
        T_MPI(MPI_Recv(b.ptr(), n, MPI_BYTE, 0, 4343, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        b.expect(t::seedOf(0, 4343), n, "send that was not cancelled");
        got = true;
      }
      if (cancelled < 0) {
        T_MPI(MPI_Iprobe(0, 4344, MPI_COMM_WORLD, &flag, &st));
        if (flag) T_MPI(MPI_Recv(&cancelled, 1, MPI_INT, 0, 4344, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      }
    }
    T_CHECK(!(cancelled && got), "a send reported cancelled was also received");
  }
}

// With cgdr and a GPU: a freed device pointer and a pointer into nothing are MPI errors.
void invalidPointers() {
#if CGDR_HAVE_CUDA
  if (!MPIX_Query_cuda_support()) return;  // plain MPI: there is no one to catch it
  void* d = nullptr;
  cudaMalloc(&d, 1 << 20);
  cudaFree(d);
  void* foreign = reinterpret_cast<void*>(0x10);  // never mapped
  for (void* p : {d, foreign}) {
    int rc = MPI_Send(p, 1 << 20, MPI_BYTE, t::rank() ^ 1, 50, MPI_COMM_WORLD);
    T_CHECK(errClass(rc) == MPI_ERR_BUFFER, "send from %p: error class %d, expected MPI_ERR_BUFFER", p, errClass(rc));
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    T_CHECK(std::strstr(s, "freed or foreign") != nullptr, "error string does not name the cause: %s", s);
    MPI_Request r = MPI_REQUEST_NULL;
    rc = MPI_Irecv(p, 1 << 20, MPI_BYTE, t::rank() ^ 1, 51, MPI_COMM_WORLD, &r);
    T_CHECK(errClass(rc) == MPI_ERR_BUFFER, "irecv into %p: error class %d", p, errClass(rc));
  }
#endif
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_errors");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const char* pre = std::getenv("CGDRTEST_PRELOADED");
  if (pre && std::strcmp(pre, "1") == 0)
    T_CHECK(MPIX_Query_cuda_support() == (t::gpuAvailable() ? 1 : 0),
            "MPIX_Query_cuda_support() = %d with cgdr, GPU available = %d", MPIX_Query_cuda_support(),
            t::gpuAvailable());
  int msg = 0;
  for (auto [sk, rk] : pairs) {
    truncation(sk, rk, ++msg);
    cancelRecv(rk);
    cancelSend(sk);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  bool gpuKinds = false;
  for (auto [a, b] : pairs) gpuKinds = gpuKinds || a != t::Kind::H || b != t::Kind::H;
  if (gpuKinds && t::size() >= 2) invalidPointers();
  return t::finish("p2p_errors");
}
