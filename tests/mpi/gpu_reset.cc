// cudaDeviceReset by the program (through the shared runtime, where cgdr interposes it), at one of
// three points (--at):
//   start:  before any GPU message, when cgdr has made nothing on the GPU yet: every message after
//           it arrives whole, as without the reset;
//   end:    after GPU messages, right before MPI_Finalize (as CUDA's samples end): a clean exit;
//   middle: after GPU messages, with more to come: cgdr's GPU state went with the context, so a
//           send or receive of a GPU buffer is refused with MPI_ERR_BUFFER naming cudaDeviceReset
//           (nothing moves: the peer's receives posted first stay pending), and host messages
//           still arrive whole. (Before, such messages crashed the process or came out wrong.)
//           With --one 1 only rank 0 resets, and then messages between its host buffers and the
//           peer's GPU buffers still arrive whole (the peer does their GPU copies).
// --min-gpus 2 (skipped with fewer): for the resident copy kernel (CGDR_CUDA_RESIDENT=always), whose
// mailbox in page-locked memory the reset frees.
// Both ranks reset, unless --one 1. Every byte of every message is checked against a pattern per rank, message
// and offset, into poisoned buffers.
#include <mpi.h>
#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <string>
#include <vector>

#include "testlib.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_reset");
  t::needGpus(std::stoi(t::arg(argc, argv, "--min-gpus", "0")), "gpu_reset");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const std::string at = t::arg(argc, argv, "--at", "end");
  T_CHECK(at == "start" || at == "middle" || at == "end", "--at %s: start, middle or end", at.c_str());
  const auto sizes = t::sizes(argc, argv);
  const int me = t::rank(), peer = me ^ 1;
  const bool one = t::arg(argc, argv, "--one", "0") == "1";
  int msg = 0;
  // Every size both ways at once (sendrecv), from a buffer of kind sk into one of kind rk.
  auto exchange = [&](t::Kind sk, t::Kind rk, const char* phase) {
    for (std::size_t n : sizes) {
      t::Buf out(sk, n), in(rk, n);
      ++msg;
      out.fill(t::seedOf(me, msg));
      in.poison();
      T_MPI(MPI_Sendrecv(out.ptr(), static_cast<int>(n), MPI_BYTE, peer, msg, in.ptr(), static_cast<int>(n), MPI_BYTE,
                         peer, msg, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      std::string what = std::string(t::name(sk)) + "->" + t::name(rk) + " " + std::to_string(n) + " B (" + phase + ")";
      in.expect(t::seedOf(peer, msg), n, what.c_str());
    }
  };
  auto reset = [&] {
#if CGDR_HAVE_CUDA
    if (!one || me == 0) {
      int dev = 0;
      cudaGetDevice(&dev);
      T_CHECK(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset");
      T_CHECK(cudaSetDevice(dev) == cudaSuccess, "cudaSetDevice(%d) after the reset", dev);
    }
#endif
    MPI_Barrier(MPI_COMM_WORLD);
  };
  if (peer < t::size()) {
    if (at == "start") reset();
    for (auto [sk, rk] : pairs) exchange(sk, rk, at == "start" ? "after the reset" : "before the reset");
    if (at == "middle") {
      reset();
      // The peer's host receives are posted first: a send wrongly let through lands there (and
      // fails the check) instead of hanging.
      const std::size_t n = 4097;
      // (With --one 1 only rank 0 has GPU buffers refused, and only rank 1 drains the sends.)
      const std::vector<t::Kind> refused =
          !one || me == 0 ? std::vector<t::Kind>{t::Kind::D, t::Kind::M} : std::vector<t::Kind>{};
      t::RefusedSends drains(peer, !one || peer == 0 ? std::vector<int>{70, 71} : std::vector<int>{}, n);
      int tag = 70;
      for (t::Kind k : refused) {
        t::Buf b(k, n);
        // (seeded by tag, not ++msg: with --one 1 the peer refuses nothing, and the message numbers
        // - the tags - of the exchanges that follow must stay the same on both ranks)
        b.fill(t::seedOf(me, tag));
        std::string s;
        int rc = MPI_Send(b.ptr(), static_cast<int>(n), MPI_BYTE, peer, tag++, MPI_COMM_WORLD);
        T_CHECK(t::refusedWith(rc, "cudaDeviceReset", &s), "send of a %s buffer after the reset: rc %d \"%s\"",
                t::name(k), rc, s.c_str());
        MPI_Request r = MPI_REQUEST_NULL;
        rc = MPI_Irecv(b.ptr(), static_cast<int>(n), MPI_BYTE, peer, 72, MPI_COMM_WORLD, &r);
        T_CHECK(t::refusedWith(rc, "cudaDeviceReset", &s), "receive into a %s buffer after the reset: rc %d \"%s\"",
                t::name(k), rc, s.c_str());
        if (rc == MPI_SUCCESS) {
          MPI_Cancel(&r);
          MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
      }
      drains.check("GPU buffers after cudaDeviceReset");
      exchange(t::Kind::H, t::Kind::H, "after the reset");
      if (one) {  // the peer's GPU buffers, both ways, against rank 0's host buffers
        t::Kind k = me == 0 ? t::Kind::H : t::Kind::D;
        exchange(k, k, "host here, GPU at the peer, after rank 0's reset");
      }
    }
    if (at == "end") reset();
  }
  return t::finish("gpu_reset");
}
