// A context of the program's own beside the CUDA runtime's primary one, on each rank's GPU (as a
// program mixing a library that makes its own context, e.g. PyCUDA's, with one on the runtime):
//   primary: messages of every pair of kinds in the primary context - cgdr makes its GPU state
//            (streams, events, pinned memory, opened IPC handles) there;
//   own:     a context made with cuCtxCreate is current; messages of buffers allocated while it
//            is, and of a GPU buffer kept from the first phase;
//   after:   the program's context destroyed (cuCtxDestroy), the primary one current again: the
//            same messages. The destroyed context took nothing of cgdr's with it.
// Every byte of every message is checked against a pattern per rank, message and offset, into
// poisoned buffers; after each MPI call the thread's current context must still be the program's.
// --min-gpus 2: with the resident copy kernel (CGDR_CUDA_RESIDENT=always), started in the first
// phase, in the primary context.
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
  t::setup(pairs, "gpu_contexts");
  t::needGpus(std::stoi(t::arg(argc, argv, "--min-gpus", "0")), "gpu_contexts");
  const auto sizes = t::sizes(argc, argv);
  const int me = t::rank(), peer = me ^ 1;
  int msg = 0;
#if CGDR_HAVE_CUDA
  // (CUresult cuCtxCreate_v4(CUcontext*, CUctxCreateParams*, unsigned flags, CUdevice), CUDA 12.5)
  auto create = reinterpret_cast<int (*)(void**, void*, unsigned, int)>(t::driverEntry("cuCtxCreate", 12050));
  auto destroy = reinterpret_cast<int (*)(void*)>(t::driverEntry("cuCtxDestroy", 12000));
  auto current = reinterpret_cast<int (*)(void**)>(t::driverEntry("cuCtxGetCurrent", 12000));
  if (!create || !destroy || !current) return t::finish("gpu_contexts");
  auto now = [&] {
    void* c = nullptr;
    current(&c);
    return c;
  };
  int dev = 0;
  cudaGetDevice(&dev);
  void* expected = nullptr;  // the context the program made current (set after the first phase's first call)
  // Every size both ways, buffers allocated with the phase's context current, which must still be
  // current after each call.
  auto exchange = [&](t::Kind sk, t::Kind rk, const char* phase) {
    t::exchangeSizes(sk, rk, sizes, peer, &msg, phase, [&](const std::string& what) {
      void* c = now();
      T_CHECK(c == expected, "%s: the current context is %p after MPI_Sendrecv, the program's is %p", what.c_str(), c,
              expected);
    });
  };
  // A GPU buffer of the first phase, sent again in each (the receiver may keep the sender's buffer
  // opened from before, in the context that was current then), into a fresh one.
  const std::size_t keptSize = sizes.empty() ? 0 : sizes.back();
  auto kept = std::make_unique<t::Buf>(t::Kind::D, keptSize);
  auto sendKept = [&](const char* phase) {
    t::Buf in(t::Kind::D, keptSize);
    ++msg;
    kept->fill(t::seedOf(me, msg));
    in.poison();
    T_MPI(MPI_Sendrecv(kept->ptr(), static_cast<int>(keptSize), MPI_BYTE, peer, msg, in.ptr(),
                       static_cast<int>(keptSize), MPI_BYTE, peer, msg, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    std::string what = std::string("the kept D buffer, ") + std::to_string(keptSize) + " B (" + phase + ")";
    in.expect(t::seedOf(peer, msg), keptSize, what.c_str());
  };
  if (peer < t::size()) {
    expected = now();
    for (auto [sk, rk] : pairs) exchange(sk, rk, "primary context");
    sendKept("primary context");
    void* own = nullptr;
    int rc = create(&own, nullptr, 0, dev);
    T_CHECK(rc == 0 && own, "cuCtxCreate on GPU %d: %d", dev, rc);
    void* primary = expected;
    expected = own;
    for (auto [sk, rk] : pairs) exchange(sk, rk, "the program's own context");
    sendKept("the program's own context current");
    MPI_Barrier(MPI_COMM_WORLD);
    T_CHECK(destroy(own) == 0, "cuCtxDestroy of the program's context");
    T_CHECK(cudaSetDevice(dev) == cudaSuccess, "cudaSetDevice(%d) after cuCtxDestroy", dev);
    expected = now();
    T_CHECK(expected == primary, "the primary context (%p) is current again after cuCtxDestroy: %p", primary, expected);
    MPI_Barrier(MPI_COMM_WORLD);
    for (auto [sk, rk] : pairs) exchange(sk, rk, "primary context, the program's destroyed");
    sendKept("primary context, the program's destroyed");
  }
  kept.reset();
#endif
  return t::finish("gpu_contexts");
}
