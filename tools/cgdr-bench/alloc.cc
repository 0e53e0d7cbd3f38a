// cgdr-bench alloc D|A: what an allocation costs the program, per size: W allocations of the size
// (W: -W, default 16 here), then W frees, repeated; the time per allocate+free pair, on a
// non-blocking stream of the program's (A: cudaMallocAsync/cudaFreeAsync on it, as PyTorch's
// cudaMallocAsync backend calls them; D: cudaMalloc/cudaFree). Every rank runs it on its own GPU
// at once; rank 0 reports. Preloaded, cgdr may serve these calls from its exportable heap
// (CGDR_CUDA_MALLOC, CGDR_CUDA_MALLOC_ASYNC): compare with the setting off in the same run.
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace bench {

int runAlloc(const Options& o) {
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
#if CGDR_HAVE_CUDA
  if (o.send != Loc::kDevice && o.send != Loc::kPool) {
    if (me == 0) std::fprintf(stderr, "cgdr-bench alloc: buffers D or A only\n");
    return 2;
  }
  bool pool = o.send == Loc::kPool;
  int window = o.windowGiven ? o.window : 16;
  cudaStream_t s = nullptr;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
  Report r{std::string("alloc ") + locLetter(o.send) + " (us per allocate+free pair, window " +
               std::to_string(window) + ")",
           "Time(us)"};
  if (me == 0) {
    std::printf("# cgdr-bench %s\n", r.title.c_str());
    std::printf("%-10s%18s\n", "# Size", r.unit.c_str());
  }
  std::vector<void*> live(static_cast<std::size_t>(window));
  bool failed = false;
  for (std::size_t n = o.minSize ? o.minSize : 1; n <= o.maxSize && !failed; n *= 2) {
    int iters = std::max(1, itersFor(o, n) / window), warm = std::max(1, warmupFor(o, n) / window);
    double t0 = 0;
    for (int i = 0; i < warm + iters && !failed; ++i) {
      if (i == warm) {
        cudaStreamSynchronize(s);
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
      }
      for (void*& p : live) failed |= (pool ? cudaMallocAsync(&p, n, s) : cudaMalloc(&p, n)) != cudaSuccess;
      for (void* p : live) failed |= (pool ? cudaFreeAsync(p, s) : cudaFree(p)) != cudaSuccess;
    }
    cudaStreamSynchronize(s);
    double us = (MPI_Wtime() - t0) * 1e6 / (double(iters) * window);
    if (failed) std::fprintf(stderr, "cgdr-bench alloc: rank %d: allocation of %zu bytes failed\n", me, n);
    Row row{n, us};
    r.rows.push_back(row);
    if (me == 0) printRow(o, row, false);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  cudaStreamDestroy(s);
  writeJson(o, r);
  return failed ? 1 : 0;
#else
  (void)o;
  if (me == 0) std::fprintf(stderr, "cgdr-bench alloc: built without CUDA\n");
  return 77;
#endif
}

}  // namespace bench
