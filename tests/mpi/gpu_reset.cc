// cudaDeviceReset by the program (gpu_reset: through the shared runtime, where cgdr interposes it;
// gpu_reset_static: through a statically linked one, where cgdr finds the reset afterwards; with
// --how driver, gpu_reset resets through the driver, cuDevicePrimaryCtxReset, which cgdr also finds
// only afterwards, while it still serves the program's cudaMalloc from its heap; with --how destroy,
// the GPU work runs in a context of the program's own, cuCtxCreate'd before its first GPU buffer,
// and cuCtxDestroy takes the reset's place), at one of three points (--at):
//   start:  before any GPU message, when cgdr has made nothing on the GPU yet: every message after
//           it arrives whole, as without the reset;
//   end:    after GPU messages, right before MPI_Finalize (as CUDA's samples end): a clean exit;
//   middle: after GPU messages, with more to come: cgdr's GPU state went with the context, so a
//           send or receive of a GPU buffer is refused with MPI_ERR_BUFFER naming cudaDeviceReset
//           (nothing moves: the peer's receives posted first stay pending), and host messages
//           still arrive whole. (Before, such messages crashed the process or came out wrong.)
//           With --one 1 only rank 0 resets, and then messages between its host buffers and the
//           peer's GPU buffers still arrive whole (the peer does their GPU copies). Collectives
//           follow: refused on GPU buffers where both reset, whole on host buffers (and on the
//           peer's GPU buffers with --one 1).
// --min-gpus 2 (skipped with fewer): for the resident copy kernel (CGDR_CUDA_RESIDENT=always), whose
// mailbox in page-locked memory the reset frees. Each refused call names the reset in one line of the log.
// Both ranks reset, unless --one 1. Every byte of every message is checked against a pattern per rank, message
// and offset, into poisoned buffers.
#include <mpi.h>
#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <memory>
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
  const std::string how = t::arg(argc, argv, "--how", "runtime");
  T_CHECK(how == "runtime" || how == "driver" || how == "destroy", "--how %s: runtime, driver or destroy",
          how.c_str());
  const bool resets = !one || me == 0;
#if CGDR_HAVE_CUDA
  // --how destroy: the program's own context (cuCtxCreate), current on this thread from before its
  // first GPU buffer until the "reset" destroys it (cuCtxDestroy; the runtime's primary context
  // serves the thread from then on).
  void* own = nullptr;
  if (how == "destroy" && resets) {
    int dev = 0;
    cudaGetDevice(&dev);
    // (CUresult cuCtxCreate_v4(CUcontext*, CUctxCreateParams*, unsigned flags, CUdevice), CUDA 12.5)
    auto create = reinterpret_cast<int (*)(void**, void*, unsigned, int)>(t::driverEntry("cuCtxCreate", 12050));
    int rc = create ? create(&own, nullptr, 0, dev) : -1;
    T_CHECK(rc == 0 && own, "cuCtxCreate on GPU %d: %d", dev, rc);
  }
#endif
  int msg = 0;
  auto exchange = [&](t::Kind sk, t::Kind rk, const char* phase) {
    t::exchangeSizes(sk, rk, sizes, peer, &msg, phase);
  };
  auto reset = [&] {
#if CGDR_HAVE_CUDA
    if (resets) {
      int dev = 0;
      cudaGetDevice(&dev);
      if (how == "runtime") {
        T_CHECK(cudaDeviceReset() == cudaSuccess, "cudaDeviceReset");
      } else if (how == "driver") {
        auto primaryCtxReset = reinterpret_cast<int (*)(int)>(t::driverEntry("cuDevicePrimaryCtxReset", 12000));
        if (primaryCtxReset) T_CHECK(primaryCtxReset(dev) == 0, "cuDevicePrimaryCtxReset(%d)", dev);
      } else {
        auto destroy = reinterpret_cast<int (*)(void*)>(t::driverEntry("cuCtxDestroy", 12000));
        if (destroy && own) T_CHECK(destroy(own) == 0, "cuCtxDestroy of the program's context");
        own = nullptr;
      }
      T_CHECK(cudaSetDevice(dev) == cudaSuccess, "cudaSetDevice(%d) after the reset", dev);
    }
#endif
    MPI_Barrier(MPI_COMM_WORLD);
  };
  // Collectives after a reset in the middle: where both ranks reset, a GPU buffer is refused on
  // both before either calls the real MPI (each buffer is classified first); then host buffers -
  // and with --one 1 the peer's GPU buffers - reduce and broadcast every byte right.
  auto collectives = [&] {
    if (t::size() != 2) return;  // (the expected sums are of ranks 0 and 1)
    std::string s;
    for (t::Kind k : one ? std::vector<t::Kind>{} : std::vector<t::Kind>{t::Kind::D, t::Kind::M}) {
      t::Buf out(k, 4097), in(k, 4097);
      int rc = MPI_Allreduce(out.ptr(), in.ptr(), 4097, MPI_UNSIGNED_CHAR, MPI_BXOR, MPI_COMM_WORLD);
      T_CHECK(t::refusedWith(rc, "cudaDeviceReset", &s), "MPI_Allreduce of %s buffers after the reset: rc %d \"%s\"",
              t::name(k), rc, s.c_str());
    }
    const t::Kind k = one && me == 1 ? t::Kind::D : t::Kind::H;
    for (std::size_t n : sizes) {
      t::Buf out(k, n), in(k, n);
      ++msg;
      out.fill(t::seedOf(me, msg));
      in.poison();
      T_MPI(MPI_Allreduce(out.ptr(), in.ptr(), static_cast<int>(n), MPI_UNSIGNED_CHAR, MPI_BXOR, MPI_COMM_WORLD));
      std::vector<std::uint8_t> got = in.get();
      std::size_t bad = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (got[i] != (t::pat(t::seedOf(0, msg), i) ^ t::pat(t::seedOf(1, msg), i))) ++bad;
      T_CHECK(bad == 0, "MPI_Allreduce (BXOR) of %zu B into a %s buffer after the reset: %zu bytes wrong", n,
              t::name(k), bad);
      ++msg;
      if (me == 0) out.fill(t::seedOf(0, msg));
      else out.poison();
      T_MPI(MPI_Bcast(out.ptr(), static_cast<int>(n), MPI_BYTE, 0, MPI_COMM_WORLD));
      std::string what = std::string("MPI_Bcast into ") + t::name(k) + " " + std::to_string(n) + " B (after the reset)";
      out.expect(t::seedOf(0, msg), n, what.c_str());
    }
  };
  if (peer < t::size()) {
    if (at == "start") reset();
    for (auto [sk, rk] : pairs) exchange(sk, rk, at == "start" ? "after the reset" : "before the reset");
    if (at == "middle") {
      // GPU buffers held across the reset and freed right after it, before anything else asks cgdr
      // about the GPU (a reset cgdr finds only afterwards is not known yet): cudaFree and
      // cudaFreeAsync of memory the reset took may fail, but must not crash, and a buffer
      // allocated next must be usable - also where cgdr's exportable heap served them. (Against a
      // crash only: on the H200 this passed too with the heap unaware of a driver's reset.)
      std::vector<std::unique_ptr<t::Buf>> held;
      for (t::Kind k : {t::Kind::D, t::Kind::A}) held.push_back(std::make_unique<t::Buf>(k, 4097));
      reset();
      held.clear();
#if CGDR_HAVE_CUDA
      (void)cudaGetLastError();
#endif
      {
        t::Buf fresh(t::Kind::D, 4097);
        fresh.fill(t::seedOf(me, 99));
        fresh.expect(t::seedOf(me, 99), 4097, "a cudaMalloc buffer written and read back after the reset");
      }
      // The peer's host receives are posted first: a send wrongly let through lands there (and
      // fails the check) instead of hanging.
      const std::size_t n = 4097;
      // (With --one 1 only rank 0 has GPU buffers refused, and only rank 1 drains the sends.)
      const std::vector<t::Kind> refused =
          resets ? std::vector<t::Kind>{t::Kind::D, t::Kind::M} : std::vector<t::Kind>{};
      t::RefusedSends drains(peer, !one || peer == 0 ? std::vector<int>{70, 71} : std::vector<int>{}, n);
      int tag = 70;
      // Each refused call names its cause once in cgdr's log (until the fifty-fifth session also
      // where the buffer was classified: twice for a small send, which is classified twice).
      t::StderrCapture capture;
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
      int logged = t::StderrCapture::linesWith(capture.text(), "after the program's cudaDeviceReset");
      T_CHECK(logged == static_cast<int>(2 * refused.size()), "%zu refused calls logged %d lines naming the reset",
              2 * refused.size(), logged);
      drains.check("GPU buffers after cudaDeviceReset");
      exchange(t::Kind::H, t::Kind::H, "after the reset");
      collectives();
      if (one) {  // the peer's GPU buffers, both ways, against rank 0's host buffers
        t::Kind k = me == 0 ? t::Kind::H : t::Kind::D;
        exchange(k, k, "host here, GPU at the peer, after rank 0's reset");
      }
    }
    if (at == "end") reset();
  }
  return t::finish("gpu_reset");
}
