// Ping-pongs of small GPU messages back to back, the traffic the resident copy kernel takes
// (mem/resident.hpp): per kind pair and size, --count messages each way, each from its own
// buffer filled beforehand with a pattern per rank, message and offset, into its own poisoned
// buffer, so that nothing but MPI runs between the messages; every byte of every message, and the
// poison after it, checked afterwards; twice over the same buffers, with new patterns. --pause-us:
// a pause between sizes, longer than the kernel's idle time, so that it leaves and is started
// again. --sync 1: a cudaDeviceSynchronize after each receive, as a program that syncs after MPI
// does (built with the shared runtime as gpu_resident_cudart, it goes through cgdr's
// cudaDeviceSynchronize, which asks the kernel to leave first).
#include <mpi.h>
#include <unistd.h>
#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "testlib.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_resident");
  t::needGpus(std::stoi(t::arg(argc, argv, "--min-gpus", "0")), "gpu_resident");
  const int me = t::rank();
  const int peer = me ^ 1;
  const int count = std::atoi(t::arg(argc, argv, "--count", "32").c_str());
  const int pauseUs = std::atoi(t::arg(argc, argv, "--pause-us", "0").c_str());
  [[maybe_unused]] const bool sync = std::atoi(t::arg(argc, argv, "--sync", "0").c_str()) != 0;  // (CUDA builds)
  const auto sizes = t::sizes(argc, argv);
  int msg = 0;
  if (peer < t::size()) {
    for (auto [sk, rk] : pairs) {
      for (std::size_t n : sizes) {
        // Message i goes from rank i % 2 to the other; this rank sends the ones of its parity, each
        // from and into buffers of its own. Two passes over the same buffers: the first maps them
        // for the peer (a first use maps the peer's buffer, and a mapping waits for the kernel to
        // leave, as cudaFree does), the second runs as a program reusing its buffers does.
        std::vector<std::unique_ptr<t::Buf>> out, in;
        for (int i = 0; i < 2 * count; ++i)
          (i % 2 == me % 2 ? out : in).push_back(std::make_unique<t::Buf>(i % 2 == me % 2 ? sk : rk, n));
        for (int pass = 0; pass < 2; ++pass) {
          const int first = msg + 1;
          for (int i = me % 2; i < 2 * count; i += 2) out[i / 2]->fill(t::seedOf(me, first + i));
          for (auto& b : in) b->poison();
          MPI_Barrier(MPI_COMM_WORLD);
          std::vector<int> got(in.size(), -1);
          for (int i = 0; i < 2 * count; ++i) {
            if (i % 2 == me % 2) {
              T_MPI(MPI_Send(out[i / 2]->ptr(), static_cast<int>(n), MPI_BYTE, peer, first + i, MPI_COMM_WORLD));
            } else {
              MPI_Status st;
              T_MPI(MPI_Recv(in[i / 2]->ptr(), static_cast<int>(n), MPI_BYTE, peer, first + i, MPI_COMM_WORLD, &st));
              MPI_Get_count(&st, MPI_BYTE, &got[i / 2]);
#if CGDR_HAVE_CUDA
              if (sync) T_CHECK(cudaDeviceSynchronize() == cudaSuccess, "cudaDeviceSynchronize after message %d",
                                first + i);
#endif
            }
          }
          for (std::size_t k = 0; k < in.size(); ++k) {
            int i = static_cast<int>(2 * k) + (me % 2 == 0 ? 1 : 0);  // the messages this rank received
            T_CHECK(got[k] == static_cast<int>(n), "message %d: count %d of %zu", first + i, got[k], n);
            char what[112];
            std::snprintf(what, sizeof what, "pass %d message %d %s->%s n=%zu", pass, first + i, t::name(sk),
                          t::name(rk), n);
            in[k]->expect(t::seedOf(peer, first + i), n, what);
          }
          msg += 2 * count;
        }
        if (pauseUs > 0) usleep(static_cast<useconds_t>(pauseUs));
      }
    }
  }
  return t::finish("gpu_resident");
}
