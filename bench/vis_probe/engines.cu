// cgdr-vis-probe: how the end of a small copy is seen; one large copy split over streams, moved by
// both GPUs at once, with a host rail beside NVLink, or by the SMs.
#include "probe.hpp"

namespace vp {

// How the end of an 8-byte copy is best seen: an event polled with cudaEventQuery (what cgdr did),
// a stream synchronize, or a word of mapped host memory that the stream writes after the copy
// (cuStreamWriteValue32) and the CPU polls with plain loads; the copy issued with cudaMemcpyAsync
// or as a graph. Median total microseconds (issue to seen done) and the cost of one event query.
void completion(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies) {
  volatile std::uint32_t* flag = nullptr;
  check(cudaHostAlloc(const_cast<std::uint32_t**>(&flag), 4096, cudaHostAllocMapped | cudaHostAllocPortable), "flag");
  void* flagDev = nullptr;
  check(cudaHostGetDevicePointer(&flagDev, const_cast<std::uint32_t*>(flag), 0), "flag device pointer");
  auto dptr = reinterpret_cast<CUdeviceptr>(flagDev);
  std::uint32_t* seqDev = nullptr;  // word k holds k: copied into the flag after the data
  check(cudaMalloc(&seqDev, 4096 * sizeof(std::uint32_t)), "seq");
  {
    std::vector<std::uint32_t> v(4096);
    for (std::uint32_t i = 0; i < 4096; ++i) v[i] = i;
    check(cudaMemcpy(seqDev, v.data(), 4096 * 4, cudaMemcpyHostToDevice), "seq fill");
  }
  std::printf("# completion of 8-byte copies, median us (issue to seen done): memcpy+event | memcpy+sync | "
              "memcpy+flag | graph+event | graph+flag | graph(copy,flag) | memcpy+flagcopy | graph(copy,flagcopy) | event query us\n");
  const size_t n = 8;
  for (const Copy& c : copies) {
    cudaGraph_t g1, g2;
    cudaGraphExec_t e1 = nullptr, e2 = nullptr;
    check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
    check(cudaMemcpyAsync(c.dst, c.src, n, cudaMemcpyDefault, s), "capture copy");
    check(cudaStreamEndCapture(s, &g1), "end capture");
    check(cudaGraphInstantiate(&e1, g1, 0), "instantiate");
    bool memopGraph = true;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
      check(cudaMemcpyAsync(c.dst, c.src, n, cudaMemcpyDefault, s), "capture copy");
      CUresult r = cuStreamWriteValue32(s, dptr, 1, 0);
      cudaError_t ec = cudaStreamEndCapture(s, &g2);
      if (r != CUDA_SUCCESS || ec != cudaSuccess || cudaGraphInstantiate(&e2, g2, 0) != cudaSuccess) memopGraph = false;
    } else {
      memopGraph = false;
    }
    (void)cudaGetLastError();
    cudaGraph_t g3;
    cudaGraphExec_t e3 = nullptr;
    check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
    check(cudaMemcpyAsync(c.dst, c.src, n, cudaMemcpyDefault, s), "capture copy");
    check(cudaMemcpyAsync(const_cast<std::uint32_t*>(flag), seqDev + 1, 4, cudaMemcpyDefault, s), "capture flag copy");
    check(cudaStreamEndCapture(s, &g3), "end capture");
    check(cudaGraphInstantiate(&e3, g3, 0), "instantiate");
    std::printf("  %-14s", c.name);
    std::uint32_t k = 0;
    for (int variant = 0; variant < 8; ++variant) {
      if (variant == 5 && !memopGraph) {
        std::printf("  n/a");
        continue;
      }
      std::vector<double> total;
      for (int it = 0; it < iters + 20; ++it) {
        ++k;
        double t0 = MPI_Wtime();
        if (variant == 6) {
          std::uint32_t want = k % 4096 ? k % 4096 : 1;
          *flag = 0;
          check(cudaMemcpyAsync(c.dst, c.src, n, cudaMemcpyDefault, s), "copy");
          check(cudaMemcpyAsync(const_cast<std::uint32_t*>(flag), seqDev + want, 4, cudaMemcpyDefault, s), "flag copy");
          while (*flag != want) {
          }
        } else if (variant == 7) {
          *flag = 0;
          check(cudaGraphLaunch(e3, s), "graph launch");
          while (*flag != 1) {
          }
        } else if (variant == 5) {
          *flag = 0;
          check(cudaGraphLaunch(e2, s), "graph launch");
          while (*flag != 1) {
          }
        } else {
          if (variant >= 3) check(cudaGraphLaunch(e1, s), "graph launch");
          else check(cudaMemcpyAsync(c.dst, c.src, n, cudaMemcpyDefault, s), "copy");
          if (variant == 1) {
            check(cudaStreamSynchronize(s), "sync");
          } else if (variant == 2 || variant == 4) {
            checkDrv(cuStreamWriteValue32(s, dptr, k, 0), "write value");
            while (*flag != k) {
            }
          } else {
            check(cudaEventRecord(ev, s), "record");
            cudaError_t q;
            while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) {
            }
            check(q, "query");
          }
        }
        if (it >= 20) total.push_back(MPI_Wtime() - t0);
      }
      std::printf(" %6.2f", median(total));
    }
    std::vector<double> q;
    for (int it = 0; it < 1000; ++it) {
      double t0 = MPI_Wtime();
      (void)cudaEventQuery(ev);
      q.push_back(MPI_Wtime() - t0);
    }
    std::printf(" | %.3f\n", median(q));
    cudaGraphExecDestroy(e3);
    cudaGraphDestroy(g3);
    cudaGraphExecDestroy(e1);
    cudaGraphDestroy(g1);
    if (e2) cudaGraphExecDestroy(e2);
    if (memopGraph) cudaGraphDestroy(g2);
  }
  cudaFreeHost(const_cast<std::uint32_t*>(flag));
  cudaFree(seqDev);
}

// Whether one large copy split over several streams (several copy engines) moves more than one
// copy: 128 MiB as 1, 2, 3 or 4 parts, each on its own stream, median of 20 (GB/s).
void split(std::initializer_list<Copy> copies, size_t cap) {
  cudaStream_t st[8];
  cudaEvent_t done[8];
  for (int i = 0; i < 8; ++i) {
    check(cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking), "stream");
    check(cudaEventCreateWithFlags(&done[i], cudaEventDisableTiming), "event");
  }
  const size_t n = std::min(cap, size_t{128} << 20);
  std::printf("# one %zu MiB copy split over streams, GB/s (median of 20): 1 | 2 | 3 | 4 parts\n", n >> 20);
  std::vector<Copy> all(copies);
  all.push_back({"both ways", nullptr, nullptr});  // the first two at once, each split
  for (const Copy& c : all) {
    std::printf("  %-14s", c.name);
    for (int parts = 1; parts <= 4; ++parts) {
      std::vector<double> t;
      for (int it = 0; it < 23; ++it) {
        double t0 = MPI_Wtime();
        size_t per = (n / parts + 4095) / 4096 * 4096;
        int ways = c.dst ? 1 : 2;
        for (int w = 0; w < ways; ++w) {
          const Copy& x = c.dst ? c : all[w];
          for (int i = 0; i < parts; ++i) {
            size_t off = per * i, len = std::min(per, n - off);
            check(cudaMemcpyAsync(static_cast<char*>(x.dst) + off, static_cast<const char*>(x.src) + off, len,
                                  cudaMemcpyDefault, st[w * 4 + i]), "copy");
            check(cudaEventRecord(done[w * 4 + i], st[w * 4 + i]), "record");
          }
        }
        for (int w = 0; w < ways; ++w)
          for (int i = 0; i < parts; ++i) check(cudaEventSynchronize(done[w * 4 + i]), "sync");
        if (it >= 3) t.push_back(MPI_Wtime() - t0);
      }
      std::printf(" %6.1f", (c.dst ? 1 : 2) * n / (median(t) * 1e-6) / 1e9);
    }
    std::printf("\n");
  }
  for (int i = 0; i < 8; ++i) {
    cudaStreamDestroy(st[i]);
    cudaEventDestroy(done[i]);
  }
}

// One 128 MiB message from rank 1 to rank 0 moved by both GPUs at once: rank 0 pulls the first
// part, rank 1 pushes the rest (each through its mapping of the other's buffer); GB/s (median of
// 20, time from a barrier until both parts are done) by the share rank 1 pushes.
void coop(int rank, void* mine, void* peer, size_t cap) {
  const size_t n = std::min(cap, size_t{128} << 20);
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
  if (rank == 0) std::printf("# one %zu MiB message moved by both GPUs, GB/s by the share pushed by the sender:", n >> 20);
  for (int pct : {0, 30, 40, 50, 60, 100}) {
    size_t pushed = n * pct / 100 / 4096 * 4096;
    std::vector<double> t;
    for (int it = 0; it < 23; ++it) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      if (rank == 0 && n > pushed)
        check(cudaMemcpyAsync(mine, peer, n - pushed, cudaMemcpyDefault, st), "pull part");
      if (rank == 1 && pushed)
        check(cudaMemcpyAsync(static_cast<char*>(peer) + (n - pushed), static_cast<char*>(mine) + (n - pushed), pushed,
                              cudaMemcpyDefault, st), "push part");
      check(cudaStreamSynchronize(st), "sync");
      double mine_t = MPI_Wtime() - t0, all = 0;
      MPI_Allreduce(&mine_t, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (it >= 3) t.push_back(all);
    }
    if (rank == 0) std::printf(" %d%% %.1f", pct, n / (median(t) * 1e-6) / 1e9);
  }
  if (rank == 0) std::printf("\n");
  cudaStreamDestroy(st);
}

// Whether a second path adds to NVLink (twenty-fifth session, `-only rail`): one 128 MiB message
// with a share h moved through host memory over PCIe (the sender's D2H into its pinned buffer and,
// at the same time, the receiver's H2D from its own pinned buffer: no dependency between the two,
// so this is the bound a pipelined host path could reach) while the rest crosses NVLink, pushed by
// the sender or pulled by the receiver. GB/s = message / the slower rank's time, median of 20.
void rail(int rank, void* mine, void* peer, size_t cap) {
  const size_t n = std::min(cap, size_t{128} << 20);
  cudaStream_t nv, pc;
  check(cudaStreamCreateWithFlags(&nv, cudaStreamNonBlocking), "stream");
  check(cudaStreamCreateWithFlags(&pc, cudaStreamNonBlocking), "stream");
  void* host = nullptr;
  check(cudaHostAlloc(&host, n, cudaHostAllocPortable), "cudaHostAlloc");
  std::memset(host, rank + 1, n);
  for (int pushNv = 0; pushNv < 2; ++pushNv) {
    if (rank == 0)
      std::printf("# one %zu MiB message, NVLink part %s, the rest through host memory; GB/s by host share:", n >> 20,
                  pushNv ? "pushed by the sender" : "pulled by the receiver");
    for (int pct : {0, 5, 8, 11, 14, 20, 100}) {
      size_t h = n * pct / 100 / 4096 * 4096, v = n - h;
      std::vector<double> t;
      for (int it = 0; it < 23; ++it) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (v && rank == (pushNv ? 1 : 0))
          check(cudaMemcpyAsync(pushNv ? peer : mine, pushNv ? mine : peer, v, cudaMemcpyDefault, nv), "nvlink part");
        if (h && rank == 1)  // sender: D2H of the tail
          check(cudaMemcpyAsync(host, static_cast<char*>(mine) + v, h, cudaMemcpyDeviceToHost, pc), "d2h part");
        if (h && rank == 0)  // receiver: H2D of the tail
          check(cudaMemcpyAsync(static_cast<char*>(mine) + v, host, h, cudaMemcpyHostToDevice, pc), "h2d part");
        check(cudaStreamSynchronize(nv), "sync");
        check(cudaStreamSynchronize(pc), "sync");
        double mine_t = MPI_Wtime() - t0, all = 0;
        MPI_Allreduce(&mine_t, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it >= 3) t.push_back(all);
      }
      if (rank == 0) std::printf(" %d%% %.1f", pct, n / (median(t) * 1e-6) / 1e9);
    }
    if (rank == 0) std::printf("\n");
  }
  std::fflush(stdout);
  cudaFreeHost(host);
  cudaStreamDestroy(nv);
  cudaStreamDestroy(pc);
}

__global__ void copyKernel(int4* __restrict__ dst, const int4* __restrict__ src, size_t n16) {
  size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x, stride = size_t{gridDim.x} * blockDim.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    int4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n16; i += stride) dst[i] = src[i];
}

// The same 128 MiB moved by the GPU's SMs (a copy kernel, 16-byte loads) instead of a copy engine,
// by grid size (blocks of 512 threads); GB/s, median of 20.
void smCopy(std::initializer_list<Copy> copies, size_t cap) {
  const size_t n = std::min(cap, size_t{128} << 20);
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
  std::printf("# %zu MiB by a copy kernel, GB/s by blocks of 512 threads:", n >> 20);
  for (const Copy& c : copies) {
    std::printf("  %s", c.name);
    for (int blocks : {16, 32, 66, 132, 264}) {
      std::vector<double> t;
      for (int it = 0; it < 23; ++it) {
        double t0 = MPI_Wtime();
        copyKernel<<<blocks, 512, 0, st>>>(static_cast<int4*>(c.dst), static_cast<const int4*>(c.src), n / 16);
        check(cudaStreamSynchronize(st), "kernel");
        if (it >= 3) t.push_back(MPI_Wtime() - t0);
      }
      std::printf(" %d:%.1f", blocks, n / (median(t) * 1e-6) / 1e9);
    }
  }
  std::printf("\n");
  cudaStreamDestroy(st);
}

}  // namespace vp
