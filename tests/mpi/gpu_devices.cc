// A rank's GPU buffers on every GPU it sees, in turn (a process driving several GPUs, as one rank
// per node does): message m of rank r goes from a buffer on GPU (m + r) % n into one on GPU
// (m + r + 1) % n at the peer, each allocated with its GPU current, while the rank's own GPU (the
// one setup chose) is current at every MPI call - and must still be after it. cgdr then copies
// with several GPUs' contexts in one process (until the fifty-seventh session its pool of events
// was one for all GPUs: an event made on one cannot be recorded on another's stream).
// Every byte of every message is checked against a pattern per rank, message and offset, into
// poisoned buffers. --min-gpus 2 where registered (with one GPU it is a plain exchange).
#include <mpi.h>
#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <memory>
#include <string>

#include "testlib.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_devices");
  t::needGpus(std::stoi(t::arg(argc, argv, "--min-gpus", "2")), "gpu_devices");
  const auto sizes = t::sizes(argc, argv);
  const int me = t::rank(), peer = me ^ 1;
#if CGDR_HAVE_CUDA
  int home = 0, n = 1;
  cudaGetDevice(&home);
  cudaGetDeviceCount(&n);
  // A buffer of kind k made (and later freed) with GPU d current; the rank's own GPU current again.
  auto make = [&](t::Kind k, std::size_t bytes, int d) {
    cudaSetDevice(d);
    auto b = std::make_unique<t::Buf>(k, bytes);
    cudaSetDevice(home);
    return b;
  };
  auto drop = [&](std::unique_ptr<t::Buf>& b, int d) {
    cudaSetDevice(d);
    b.reset();
    cudaSetDevice(home);
  };
  int msg = 0;
  if (peer < t::size()) {
    for (int round = 0; round < 2; ++round)  // (the second: streams, events and mappings made in the first reused)
      for (auto [sk, rk] : pairs)
        for (std::size_t size : sizes) {
          ++msg;
          const int from = (msg + me) % n, to = (msg + me + 1) % n;
          auto out = make(sk, size, from), in = make(rk, size, to);
          out->fill(t::seedOf(me, msg));
          in->poison();
          T_MPI(MPI_Sendrecv(out->ptr(), static_cast<int>(size), MPI_BYTE, peer, msg, in->ptr(), static_cast<int>(size),
                             MPI_BYTE, peer, msg, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
          int now = -1;
          cudaGetDevice(&now);
          std::string what = std::string(t::name(sk)) + " on GPU " + std::to_string(from) + " -> " + t::name(rk) +
                             " on GPU " + std::to_string(to) + ", " + std::to_string(size) + " B (round " +
                             std::to_string(round) + ")";
          T_CHECK(now == home, "%s: GPU %d current after MPI_Sendrecv, the program's is %d", what.c_str(), now, home);
          in->expect(t::seedOf(peer, msg), size, what.c_str());
          drop(out, from);
          drop(in, to);
        }
  }
#endif
  return t::finish("gpu_devices");
}
