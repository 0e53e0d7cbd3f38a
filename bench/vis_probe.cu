// What a copy to or from another process's GPU memory costs when that GPU is, or is not, visible
// to the copying process (CUDA_VISIBLE_DEVICES), and whether the way the copy is issued matters:
// cudaMemcpyAsync, a CUDA graph captured once, the same graph re-pointed per copy
// (cudaGraphExecMemcpyNodeSetParams1D). (A copy kernel was measured too, on 2026-11-23: no better
// than cudaMemcpyAsync, 8.5–10 us for 8 B, so it was dropped.) No cgdr. The memory is an
// exportable cuMem allocation (POSIX fd, as cgdr's cuda-vmm channel uses across containers),
// handed over with pidfd_getfd (both ranks in one PID namespace under mpirun).
// Built on the GPU machine by bench/gpu-suite.sh (step visprobe):
//   nvcc -O2 -arch=sm_90 vis_probe.cu -lcuda $(mpicxx --showme:link)
//   mpirun -np 2 cgdr-vis-probe one|both [-i N]
// Prints per size the median issue time (the enqueue calls) and total time (until an event
// query says done) in microseconds, for each variant, on rank 0. Then (added 2026-11-23, fourth
// session): what single runtime/driver calls on a small message's path cost; whether one large
// copy moves more split over several streams, moved by both GPUs at once (the receiver pulling
// part, the sender pushing the rest), or by a copy kernel instead of a copy engine; and how the
// end of an 8-byte copy is seen soonest (event query, stream synchronize, or a word of mapped
// host memory written after the copy by cuStreamWriteValue32 or by a second copy). And (fifth
// session, `-only batch`): a window of small pulls issued one by one or as one batch. And
// (twenty-fifth session, `-only rail`): whether host memory over PCIe adds to NVLink for one message.
// And (twenty-ninth session, `-only import`): whether the way the peer's memory is exported and
// mapped changes the pull bandwidth where the peer's GPU is invisible (the one-visible-GPU limit);
// and (`-only rail2`) what host copies on both GPUs do to NVLink traffic both ways. And
// (thirty-eighth session, `-only wstreams`): windows of large copies over one stream or several.
// And (fortieth session, `-only bell`): an 8-byte copy queued before its message behind a wait on
// mapped host memory, started by one store. And (forty-second session, `-only align`): whether
// the first event query of an 8-byte copy, held back until the copy should have ended, sees the
// end sooner than queries from the issue on; and (`-only evnode`) whether an event record node
// inside the copy's graph is seen done sooner than cudaEventRecord after the launch. And
// (forty-seventh session, `-only spin`): messages copied by a resident kernel rung through mapped
// host memory, against the copy engine, in a ping-pong between the ranks.
#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cgdr-vis-probe: %s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

void checkDrv(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = "?";
    cuGetErrorString(r, &s);
    std::fprintf(stderr, "cgdr-vis-probe: %s: %s\n", what, s);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

double median(std::vector<double>& t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] * 1e6;
}

// Records the event after what was just enqueued (started at t0), polls it, and keeps the issue
// time and the time until seen done unless the round is a warm-up.
void timeToDone(cudaStream_t s, cudaEvent_t ev, double t0, bool keep, std::vector<double>& issue,
                std::vector<double>& total) {
  check(cudaEventRecord(ev, s), "record");
  double t1 = MPI_Wtime();
  cudaError_t q;
  while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) {
  }
  check(q, "query");
  double t2 = MPI_Wtime();
  if (keep) {
    issue.push_back(t1 - t0);
    total.push_back(t2 - t0);
  }
}

struct Copy {
  const char* name;
  void* dst;
  const void* src;
};

// A graph of the n-byte copy c, then, where `record` is given, an event record node after it;
// instantiated. *g: the graph (the caller destroys both).
cudaGraphExec_t copyGraph(const Copy& c, size_t n, cudaGraph_t* g, cudaEvent_t record = nullptr) {
  cudaGraphNode_t node, rec;
  cudaGraphExec_t e = nullptr;
  check(cudaGraphCreate(g, 0), "graph");
  check(cudaGraphAddMemcpyNode1D(&node, *g, nullptr, 0, c.dst, c.src, n, cudaMemcpyDefault), "node");
  if (record) check(cudaGraphAddEventRecordNode(&rec, *g, &node, 1, record), "event record node");
  check(cudaGraphInstantiate(&e, *g, 0), "instantiate");
  return e;
}

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

// A window of small pulls moved by the SMs (thirty-sixth session, `-only kbatch`): N messages of n
// bytes, each its own (source, destination, length), copied by one kernel launch of N blocks
// whose descriptors travel as the kernel's parameter, against N copies on the copy engine
// (cudaMemcpyAsync each, or a graph re-pointed each where the peer's GPU is invisible). One
// event after them, polled. Median issue and total us over `iters` windows.
struct KDesc {
  const unsigned char* src;
  unsigned char* dst;
  unsigned long long n;
};
struct KBatch {
  int count;
  KDesc d[64];
};
__global__ void gatherKernel(KBatch b) {
  if (static_cast<int>(blockIdx.x) >= b.count) return;
  KDesc m = b.d[blockIdx.x];
  unsigned long long i = threadIdx.x, step = blockDim.x;
  if (((reinterpret_cast<unsigned long long>(m.src) | reinterpret_cast<unsigned long long>(m.dst)) & 15) == 0) {
    unsigned long long n16 = m.n / 16;
    const int4* s = reinterpret_cast<const int4*>(m.src);
    int4* d = reinterpret_cast<int4*>(m.dst);
    for (; i < n16; i += step) d[i] = s[i];
    for (i = n16 * 16 + threadIdx.x; i < m.n; i += step) m.dst[i] = m.src[i];
  } else {
    for (; i < m.n; i += step) m.dst[i] = m.src[i];
  }
}

// Windows of large copies spread over several streams (thirty-eighth session, `-only wstreams`):
// whether a window of W messages of 512 KiB-8 MiB (a bandwidth test's) moves more when its copies
// go round-robin over 2 or 4 streams (copy engines) instead of one. GB/s, median of `reps` windows.
void wstreams(int reps, void* dstBase, const void* srcBase, const char* name, size_t cap) {
  cudaStream_t st[4];
  for (auto& x : st) check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "stream");
  for (size_t n : {size_t{512} << 10, size_t{1} << 20, size_t{2} << 20, size_t{4} << 20, size_t{8} << 20}) {
    int w = static_cast<int>(std::min<size_t>(64, cap / n));
    std::printf("  wstreams %-12s %5zu KiB x %2d |", name, n >> 10, w);
    for (int ns : {1, 2, 4}) {
      std::vector<double> t;
      for (int it = 0; it < reps + 3; ++it) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < w; ++k)
          check(cudaMemcpyAsync(static_cast<char*>(dstBase) + k * n, static_cast<const char*>(srcBase) + k * n, n,
                                cudaMemcpyDefault, st[k % ns]),
                "copy");
        for (int k = 0; k < ns; ++k) check(cudaStreamSynchronize(st[k]), "sync");
        if (it >= 3) t.push_back(MPI_Wtime() - t0);
      }
      double us = median(t);
      std::printf(" %d stream(s) %6.1f GB/s", ns, static_cast<double>(n) * w / us / 1e3);
    }
    std::printf("\n");
  }
  for (auto& x : st) cudaStreamDestroy(x);
}

void kbatch(cudaStream_t s, cudaEvent_t ev, int iters, void* dstBase, const void* srcBase, const char* name,
            bool graph) {
  for (size_t n : {size_t{8}, size_t{4096}, size_t{65536}}) {
    for (int count : {1, 2, 8, 64}) {
      size_t stride = std::max<size_t>(n, 256);
      KBatch b{};
      b.count = count;
      for (int k = 0; k < count; ++k) {
        b.d[k].src = static_cast<const unsigned char*>(srcBase) + k * stride;
        b.d[k].dst = static_cast<unsigned char*>(dstBase) + k * stride;
        b.d[k].n = n;
      }
      cudaGraph_t g;
      cudaGraphExec_t exec = nullptr;
      cudaGraphNode_t node;
      check(cudaGraphCreate(&g, 0), "graph");
      check(cudaGraphAddMemcpyNode1D(&node, g, nullptr, 0, b.d[0].dst, b.d[0].src, n, cudaMemcpyDefault), "node");
      check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
      std::printf("  kbatch %-12s %6zu B x %2d |", name, n, count);
      for (int kind = 0; kind < 2; ++kind) {
        std::vector<double> issue, total;
        int reps = count >= 64 ? iters / 4 : iters;
        for (int it = 0; it < reps + 10; ++it) {
          double t0 = MPI_Wtime();
          if (kind == 0) {
            for (int k = 0; k < count; ++k) {
              if (graph) {
                check(cudaGraphExecMemcpyNodeSetParams1D(exec, node, b.d[k].dst, b.d[k].src, n, cudaMemcpyDefault),
                      "set params");
                check(cudaGraphLaunch(exec, s), "graph launch");
              } else {
                check(cudaMemcpyAsync(b.d[k].dst, b.d[k].src, n, cudaMemcpyDefault, s), "copy");
              }
            }
          } else {
            gatherKernel<<<count, 256, 0, s>>>(b);
            check(cudaGetLastError(), "kernel launch");
          }
          timeToDone(s, ev, t0, it >= 10, issue, total);
        }
        std::printf(" %s %6.2f/%7.2f (%.2f per msg)", kind == 0 ? (graph ? "graphs" : "memcpy") : "kernel",
                    median(issue), median(total), median(total) / count);
      }
      std::printf("\n");
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(g);
    }
  }
  // Byte check of the kernel's copies: odd sizes and offsets.
  std::vector<unsigned char> want(70000), got(70000);
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<unsigned char>(i * 7 + 3);
  void* tmp = nullptr;
  check(cudaMalloc(&tmp, want.size()), "tmp");
  check(cudaMemcpy(tmp, want.data(), want.size(), cudaMemcpyHostToDevice), "fill");
  KBatch b{};
  size_t sizes[] = {1, 3, 17, 4097, 65537}, offs[] = {0, 5, 1, 16, 3};
  b.count = 5;
  for (int k = 0; k < 5; ++k) {
    b.d[k].src = static_cast<const unsigned char*>(tmp) + offs[k];
    b.d[k].dst = static_cast<unsigned char*>(dstBase) + (size_t{k} << 17) + offs[(k + 1) % 5];
    b.d[k].n = sizes[k];
  }
  gatherKernel<<<5, 256, 0, s>>>(b);
  check(cudaStreamSynchronize(s), "kernel");
  int bad = 0;
  for (int k = 0; k < 5; ++k) {
    check(cudaMemcpy(got.data(), b.d[k].dst, sizes[k], cudaMemcpyDeviceToHost), "read back");
    if (std::memcmp(got.data(), want.data() + offs[k], sizes[k]) != 0) ++bad;
  }
  std::printf("  kbatch byte check %s: %s\n", name, bad ? "FAIL" : "ok");
  cudaFree(tmp);
}

// Many small pulls at once (a window of messages, as bw/bibw post): N copies of n bytes from the
// peer's buffer, issued one cudaMemcpyAsync each, or as one cudaMemcpyBatchAsync; one event after
// them. Median issue and total us over `iters` windows, and the issue per copy.
void batch(cudaStream_t s, cudaEvent_t ev, int iters, void* dstBase, const void* srcBase, const char* name) {
  for (size_t n : {size_t{8}, size_t{65536}}) {
    for (size_t count : {size_t{1}, size_t{8}, size_t{64}}) {
      std::vector<void*> dsts(count);
      std::vector<const void*> srcs(count);
      std::vector<size_t> sizes(count, n);
      size_t stride = std::max<size_t>(n, 256);
      for (size_t k = 0; k < count; ++k) {
        dsts[k] = static_cast<char*>(dstBase) + k * stride;
        srcs[k] = static_cast<const char*>(srcBase) + k * stride;
      }
      cudaMemcpyAttributes attr{};
      attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
      size_t attrIdx = 0;
      std::printf("  batch %-12s %6zu B x %2zu |", name, n, count);
      for (int kind = 0; kind < 2; ++kind) {
        std::vector<double> issue, total;
        int reps = count >= 64 ? iters / 8 : iters / 2;
        for (int k = 0; k < reps + 10; ++k) {
          double t0 = MPI_Wtime();
          if (kind == 0) {
            for (size_t c = 0; c < count; ++c)
              check(cudaMemcpyAsync(dsts[c], srcs[c], n, cudaMemcpyDefault, s), "copy");
          } else {
            check(cudaMemcpyBatchAsync(dsts.data(), srcs.data(), sizes.data(), count, &attr, &attrIdx, 1, s),
                  "cudaMemcpyBatchAsync");
          }
          timeToDone(s, ev, t0, k >= 10, issue, total);
        }
        double mi = median(issue);
        std::printf(" %s %6.2f/%7.2f (%.2f per copy)", kind == 0 ? "memcpy" : "batch", mi, median(total), mi / count);
      }
      std::printf("\n");
    }
  }
}

// What single runtime and driver calls cost here (median of 2000, us): those on the path of every
// small GPU message.
void callCosts(cudaStream_t s, cudaEvent_t ev, void* dev, void* host) {
  auto med = [](auto&& f) {
    std::vector<double> t;
    for (int i = 0; i < 2020; ++i) {
      double t0 = MPI_Wtime();
      f();
      if (i >= 20) t.push_back(MPI_Wtime() - t0);
    }
    return median(t);
  };
  unsigned memType = 0, isManaged = 0;
  int ordinal = -1;
  unsigned long long bufferId = 0;
  CUdeviceptr start = 0;
  size_t range = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* data[] = {&memType, &isManaged, &ordinal, &bufferId, &start, &range};
  auto p = reinterpret_cast<CUdeviceptr>(static_cast<char*>(dev) + 4096);
  double a6 = med([&] { cuPointerGetAttributes(6, attrs, data, p); });
  double a3 = med([&] { cuPointerGetAttributes(3, attrs, data, p); });
  double a1 = med([&] { cuPointerGetAttribute(&bufferId, CU_POINTER_ATTRIBUTE_BUFFER_ID, p); });
  double ah = med([&] { cuPointerGetAttributes(3, attrs, data, reinterpret_cast<CUdeviceptr>(host)); });
  int cur = 0;
  double gd = med([&] { cudaGetDevice(&cur); });
  double sd = med([&] { cudaSetDevice(cur); });
  check(cudaStreamSynchronize(s), "sync");
  double er = med([&] { cudaEventRecord(ev, s); });
  check(cudaStreamSynchronize(s), "sync");
  double eq = med([&] { cudaEventQuery(ev); });
  double sq = med([&] { cudaStreamQuery(s); });
  CUevent cev = reinterpret_cast<CUevent>(ev);
  double deq = med([&] { cuEventQuery(cev); });
  std::printf("# call costs, us: pointer attrs 6 %.3f, 3 %.3f, buffer id %.3f, host 3 %.3f | cudaGetDevice %.3f, "
              "cudaSetDevice(same) %.3f | cudaEventRecord %.3f, cudaEventQuery(done) %.3f, cuEventQuery %.3f, "
              "cudaStreamQuery(idle) %.3f\n",
              a6, a3, a1, ah, gd, sd, er, eq, deq, sq);
}

// The host rail with traffic both ways (twenty-ninth session, `-only rail2`): both ranks push a
// 64 MiB message at once, each sending a share h of it through host memory: its own D2H of the
// outgoing tail and, at the same time, the H2D of the peer's tail from another pinned buffer (no
// dependency between them: the bound a pipelined host path could reach). Which of the host copies
// disturbs NVLink, if any: both, only the D2H, only the H2D. GB/s in total (both directions) =
// 2 x message / the slower rank's time, median of 20.
void rail2(int rank, void* mine, void* peer, size_t cap) {
  const size_t n = std::min(cap / 2, size_t{64} << 20);
  cudaStream_t nv, d2h, h2d;
  check(cudaStreamCreateWithFlags(&nv, cudaStreamNonBlocking), "stream");
  check(cudaStreamCreateWithFlags(&d2h, cudaStreamNonBlocking), "stream");
  check(cudaStreamCreateWithFlags(&h2d, cudaStreamNonBlocking), "stream");
  void *hostOut = nullptr, *hostIn = nullptr, *land = nullptr;
  check(cudaHostAlloc(&hostOut, n, cudaHostAllocPortable), "cudaHostAlloc");
  check(cudaHostAlloc(&hostIn, n, cudaHostAllocPortable), "cudaHostAlloc");
  check(cudaMalloc(&land, n), "cudaMalloc");
  std::memset(hostIn, rank + 1, n);
  const char* what[] = {"D2H and H2D", "D2H only", "H2D only"};
  for (int w = 0; w < 3; ++w) {
    if (rank == 0) std::printf("# both ways, %zu MiB each, host part by %s; GB/s total by host share:", n >> 20, what[w]);
    for (int pct : {0, 1, 2, 4, 7, 10, 15}) {
      if (w && !pct) continue;
      size_t h = n * pct / 100 / 4096 * 4096, v = n - h;
      std::vector<double> t;
      for (int it = 0; it < 23; ++it) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        check(cudaMemcpyAsync(static_cast<char*>(peer) + n, mine, v, cudaMemcpyDefault, nv), "nvlink part");
        if (h && w != 2) check(cudaMemcpyAsync(hostOut, static_cast<char*>(mine) + v, h, cudaMemcpyDeviceToHost, d2h), "d2h");
        if (h && w != 1) check(cudaMemcpyAsync(land, hostIn, h, cudaMemcpyHostToDevice, h2d), "h2d");
        check(cudaStreamSynchronize(nv), "sync");
        check(cudaStreamSynchronize(d2h), "sync");
        check(cudaStreamSynchronize(h2d), "sync");
        double mt = MPI_Wtime() - t0, all = 0;
        MPI_Allreduce(&mt, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (it >= 3) t.push_back(all);
      }
      if (rank == 0) std::printf(" %d%% %.1f", pct, 2.0 * n / (median(t) * 1e-6) / 1e9);
    }
    if (rank == 0) std::printf("\n");
    std::fflush(stdout);
  }
  cudaFreeHost(hostOut);
  cudaFreeHost(hostIn);
  cudaFree(land);
  cudaStreamDestroy(nv);
  cudaStreamDestroy(d2h);
  cudaStreamDestroy(h2d);
}

// Work queued before the message exists, started by a store (fortieth session, `-only bell`):
// whether an 8-byte message's copy ends sooner when the stream already holds it behind a wait on
// a word of mapped host memory (cuStreamWaitValue32), so that the CPU's part on the critical path
// is one store instead of the copy's issue (2.5-4 us here). The copy queued behind the wait is a
// graph with its addresses fixed (a bound: the message's addresses must be known when queued) or
// a kernel that reads (source, destination, length) from mapped host memory when it runs, written
// by the CPU just before the store. Its end is seen by an event query or by a word of mapped host
// memory the stream writes after the copy. Median us from the store (or, for the copy issued at
// once, from the issue) to seen done; `arm`: the CPU time to queue the wait, copy and signal.
struct BellDesc {
  unsigned long long src, dst, n;
};
__global__ void bellKernel(const volatile BellDesc* d) {
  __shared__ BellDesc m;
  if (threadIdx.x == 0) {
    m.src = d->src;
    m.dst = d->dst;
    m.n = d->n;
  }
  __syncthreads();
  const unsigned char* s = reinterpret_cast<const unsigned char*>(m.src);
  unsigned char* t = reinterpret_cast<unsigned char*>(m.dst);
  for (unsigned long long i = threadIdx.x; i < m.n; i += blockDim.x) t[i] = s[i];
}

void spinUs(double us) {
  double t = MPI_Wtime() + us * 1e-6;
  while (MPI_Wtime() < t) {
  }
}

void bell(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies) {
  volatile std::uint32_t* words = nullptr;  // [0] the bell, [16] the done word
  volatile BellDesc* desc = nullptr;
  check(cudaHostAlloc(const_cast<std::uint32_t**>(&words), 4096, cudaHostAllocMapped | cudaHostAllocPortable), "bell");
  check(cudaHostAlloc(const_cast<BellDesc**>(&desc), 4096, cudaHostAllocMapped | cudaHostAllocPortable), "desc");
  void *wd = nullptr, *dd = nullptr;
  check(cudaHostGetDevicePointer(&wd, const_cast<std::uint32_t*>(words), 0), "bell device pointer");
  check(cudaHostGetDevicePointer(&dd, const_cast<BellDesc*>(desc), 0), "desc device pointer");
  CUdeviceptr bellDev = reinterpret_cast<CUdeviceptr>(wd), doneDev = bellDev + 64;
  volatile std::uint32_t* done = words + 16;
  words[0] = 0;
  *done = 0;
  const size_t n = 8;
  // Loaded now: a kernel's first launch loads its module (lazy loading), which waits for the
  // streams, so a first launch behind a closed wait would never return.
  desc->n = 0;
  bellKernel<<<1, 64, 0, s>>>(static_cast<const volatile BellDesc*>(dd));
  check(cudaStreamSynchronize(s), "bell kernel load");
  std::printf("# bell: 8-byte copy, median us to seen done (arm us) | issued at once: graph+event, memcpy+event | "
              "queued behind a wait, rung after 0 / 30 us: graph+event, kernel+event, kernel+word, wait alone+event\n");
  std::uint32_t k = 0;
  for (const Copy& c : copies) {
    cudaGraph_t g;
    cudaGraphExec_t e = copyGraph(c, n, &g);
    std::printf("  %-14s", c.name);
    std::fflush(stdout);
    for (int variant = 0; variant < 10; ++variant) {
      if (variant == 2) std::printf(" |");
      std::vector<double> total, arm;
      bool ok = true;
      for (int it = 0; it < iters + 20 && ok; ++it) {
        if (variant < 2) {
          double t0 = MPI_Wtime();
          if (variant == 0) check(cudaGraphLaunch(e, s), "graph launch");
          else check(cudaMemcpyAsync(c.dst, c.src, n, cudaMemcpyDefault, s), "copy");
          timeToDone(s, ev, t0, it >= 20, arm, total);  // (arm: the issue time, not printed here)
          continue;
        }
        int kind = (variant - 2) % 4;  // graph, kernel+event, kernel+word, wait alone
        double delay = variant < 6 ? 0 : 30;
        ++k;
        double ta = MPI_Wtime();
        CUresult wr = cuStreamWaitValue32(s, bellDev, k, CU_STREAM_WAIT_VALUE_GEQ);
        if (wr != CUDA_SUCCESS) {
          const char* es = "?";
          cuGetErrorString(wr, &es);
          std::printf(" (wait refused: %s)", es);
          ok = false;
          break;
        }
        if (kind == 0) check(cudaGraphLaunch(e, s), "graph launch");
        if (kind == 1 || kind == 2) {
          bellKernel<<<1, 64, 0, s>>>(static_cast<const volatile BellDesc*>(dd));
          check(cudaGetLastError(), "bell kernel");
        }
        if (kind == 2) checkDrv(cuStreamWriteValue32(s, doneDev, k, 0), "write value");
        else check(cudaEventRecord(ev, s), "record");
        double tb = MPI_Wtime();
        spinUs(delay);
        desc->src = reinterpret_cast<unsigned long long>(c.src);
        desc->dst = reinterpret_cast<unsigned long long>(c.dst);
        desc->n = n;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        double t0 = MPI_Wtime();
        words[0] = k;
        bool seen = false;
        if (kind == 2) {
          while (!(seen = *done == k) && MPI_Wtime() - t0 < 1) {
          }
        } else {
          cudaError_t q;
          while ((q = cudaEventQuery(ev)) == cudaErrorNotReady && MPI_Wtime() - t0 < 1) {
          }
          seen = q == cudaSuccess;
          if (q != cudaSuccess && q != cudaErrorNotReady) check(q, "query");
        }
        if (!seen) {  // not done within a second: report it, open the wait for good and go on
          std::printf(" stuck(variant %d, it %d, done word %u)", variant, it, static_cast<unsigned>(*done));
          std::fflush(stdout);
          words[0] = 0x7fffffffu;
          check(cudaStreamSynchronize(s), "drain");
          words[0] = 0;
          k = 0;
          ok = false;
          break;
        }
        if (it >= 20) {
          total.push_back(MPI_Wtime() - t0);
          arm.push_back(tb - ta);
        }
      }
      if (!ok) std::printf("   n/a");
      else if (variant < 2) std::printf(" %6.2f", median(total));
      else std::printf(" %6.2f (%.2f)", median(total), median(arm));
      std::fflush(stdout);
    }
    std::printf("\n");
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
  }
  // The kernel's copy checked: 8 bytes of a pattern through the bell.
  std::uint64_t want = 0x0123456789abcdefull, got = 0;
  void* tmp = nullptr;
  check(cudaMalloc(&tmp, 64), "tmp");
  check(cudaMemcpy(tmp, &want, 8, cudaMemcpyHostToDevice), "fill");
  const Copy& c = *copies.begin();
  ++k;
  checkDrv(cuStreamWaitValue32(s, bellDev, k, CU_STREAM_WAIT_VALUE_GEQ), "wait");
  bellKernel<<<1, 64, 0, s>>>(static_cast<const volatile BellDesc*>(dd));
  desc->src = reinterpret_cast<unsigned long long>(tmp);
  desc->dst = reinterpret_cast<unsigned long long>(c.dst);
  desc->n = 8;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  words[0] = k;
  check(cudaStreamSynchronize(s), "bell check");
  check(cudaMemcpy(&got, c.dst, 8, cudaMemcpyDefault), "read back");
  std::printf("  bell kernel copy check: %s\n", got == want ? "ok" : "WRONG");
  cudaFree(tmp);
  cudaFreeHost(const_cast<std::uint32_t*>(words));
  cudaFreeHost(const_cast<BellDesc*>(desc));
}

// When to ask whether an 8-byte copy ended (forty-second session, `-only align`): an event query
// costs ~1.3 us here, so polling from the issue on sees the end up to one query late. Here the
// first query waits until D us after the issue (spinning on the clock), then queries follow back
// to back, D = 0 (at once, what cgdr does) ... 7 us, the variants interleaved per iteration.
// Median us from the issue to seen done, how often the first query already said done, and the
// median time of the query that said done.
void align(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies) {
  const double delays[] = {0, 2, 3, 3.5, 4, 4.5, 5, 5.5, 6, 7};
  const int nd = sizeof delays / sizeof delays[0];
  const size_t n = 8;
  std::printf("# align: 8-byte graph copy, first event query D us after the issue; per D: median us issue to seen"
              " done / %% first query done / median us of the query that said done\n");
  for (const Copy& c : copies) {
    cudaGraph_t g;
    cudaGraphExec_t e = copyGraph(c, n, &g);
    std::vector<std::vector<double>> total(nd), last(nd);
    std::vector<int> first(nd, 0);
    for (int it = 0; it < iters + 20; ++it) {
      for (int d = 0; d < nd; ++d) {
        double t0 = MPI_Wtime();
        check(cudaGraphLaunch(e, s), "graph launch");
        check(cudaEventRecord(ev, s), "record");
        double until = t0 + delays[d] * 1e-6;
        while (MPI_Wtime() < until) {
        }
        int queries = 0;
        double tq;
        cudaError_t q;
        do {
          tq = MPI_Wtime();
          q = cudaEventQuery(ev);
          ++queries;
        } while (q == cudaErrorNotReady);
        check(q, "query");
        double t2 = MPI_Wtime();
        if (it >= 20) {
          total[d].push_back(t2 - t0);
          last[d].push_back(t2 - tq);
          first[d] += queries == 1;
        }
      }
    }
    std::printf("  %-14s", c.name);
    for (int d = 0; d < nd; ++d)
      std::printf(" | D=%.1f %.2f %3.0f%% %.2f", delays[d], median(total[d]), 100.0 * first[d] / iters, median(last[d]));
    std::printf("\n");
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
  }
}

// Whether the event recorded inside the copy's graph (one launch: copy node, then event record
// node) is seen done sooner than a graph launch followed by cudaEventRecord (what cgdr does):
// `-only evnode`, interleaved per iteration. Median us issue to seen done, and of the issue.
void evnode(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies) {
  const size_t n = 8;
  cudaEvent_t ev2;
  check(cudaEventCreateWithFlags(&ev2, cudaEventDisableTiming), "event");
  std::printf("# evnode: 8-byte copy, median us issue to seen done (issue): graph + cudaEventRecord | graph(copy, "
              "event record node)\n");
  for (const Copy& c : copies) {
    cudaGraph_t g1, g2;
    cudaGraphExec_t e1 = copyGraph(c, n, &g1), e2 = copyGraph(c, n, &g2, ev2);
    std::vector<double> total[2], issue[2];
    for (int it = 0; it < iters + 20; ++it) {
      for (int v = 0; v < 2; ++v) {
        double t0 = MPI_Wtime();
        if (v == 0) {
          check(cudaGraphLaunch(e1, s), "graph launch");
          check(cudaEventRecord(ev, s), "record");
        } else {
          check(cudaGraphLaunch(e2, s), "graph launch");
        }
        double t1 = MPI_Wtime();
        cudaError_t q;
        while ((q = cudaEventQuery(v == 0 ? ev : ev2)) == cudaErrorNotReady) {
        }
        check(q, "query");
        double t2 = MPI_Wtime();
        if (it >= 20) {
          total[v].push_back(t2 - t0);
          issue[v].push_back(t1 - t0);
        }
      }
    }
    std::printf("  %-14s %.2f (%.2f) | %.2f (%.2f)\n", c.name, median(total[0]), median(issue[0]), median(total[1]),
                median(issue[1]));
    cudaGraphExecDestroy(e1);
    cudaGraphExecDestroy(e2);
    cudaGraphDestroy(g1);
    cudaGraphDestroy(g2);
  }
  cudaEventDestroy(ev2);
}

// Another process's GPU memory, exported one way and imported here (twenty-ninth session, `-only
// import`). A cuMem allocation imported from a POSIX fd runs ~7 % below a legacy IPC mapping of
// the same GPU's memory where that GPU is invisible to the importer (twenty-seventh session): is it
// the allocation's granularity, the mapping's alignment, or the fd import itself (a stream-ordered
// pool shared by fd takes another import path in the driver)?
int fdOf(int rank, int fd) {  // the peer's fd `fd` (both ranks in one PID namespace under mpirun)
  int mine[2] = {static_cast<int>(getpid()), fd}, all[4];
  MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
  int other = 1 - rank;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, all[2 * other], 0));
  int got = pidfd >= 0 ? static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, all[2 * other + 1], 0)) : -1;
  if (got < 0) {
    std::fprintf(stderr, "cgdr-vis-probe: pidfd_getfd failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (pidfd >= 0) close(pidfd);
  return got;
}

void importPaths(int rank, int dev, bool one) {
  const size_t n = size_t{128} << 20;
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
  void* dst = nullptr;
  check(cudaMalloc(&dst, n), "cudaMalloc");
  if (rank == 0)
    std::printf("# import paths (%s): GB/s of a pull by rank 0 alone (128 MiB / 8 MiB / 1 MiB) | both ranks pulling "
                "128 MiB / 8 MiB at once (total) | both pushing, the same, median of 20\n",
                one ? "each rank sees only its GPU" : "both GPUs");
  if (rank == 0) {
    int fabric = 0;
    CUdevice cd;
    checkDrv(cuDeviceGet(&cd, dev), "device");
    cuDeviceGetAttribute(&fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, cd);
    std::printf("# fabric handles supported: %d\n", fabric);
  }
  const char* names[] = {"cuMem min gran, reserve align 0", "cuMem recommended gran+align",
                         "cuMem, VA aligned to 1 GiB",     "cuMem gpuDirectRDMACapable",
                         "cuMem, importer's access set twice", "pool fd, cudaMemPoolImportPointer",
                         "legacy cudaIpc handle",          "cuMem fabric handle (bytes, no fd)"};
  for (int v = 0; v < 8; ++v) {
    void* src = nullptr;  // this rank's exported memory
    void* peer = nullptr;  // the peer's, mapped here
    CUmemGenericAllocationHandle mh = 0, ph = 0;
    CUdeviceptr va = 0, pva = 0;
    size_t bytes = n, align = 0;
    cudaMemPool_t pool = nullptr, ipool = nullptr;
    const char* err = nullptr;
    if (v <= 4 || v == 7) {
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = dev;
      prop.requestedHandleTypes = v == 7 ? CU_MEM_HANDLE_TYPE_FABRIC : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      if (v == 3) prop.allocFlags.gpuDirectRDMACapable = 1;
      size_t gran = 0;
      checkDrv(cuMemGetAllocationGranularity(&gran, &prop, v == 1 ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
                                                                  : CU_MEM_ALLOC_GRANULARITY_MINIMUM),
               "granularity");
      if (v == 1) align = gran;
      if (v == 2) align = gran = size_t{1} << 30;
      bytes = (n + gran - 1) / gran * gran;
      CUmemAccessDesc acc{};
      acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      acc.location.id = dev;
      acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      CUresult r = cuMemCreate(&mh, bytes, &prop, 0);
      CUmemFabricHandle fh{};
      if (r != CUDA_SUCCESS) {
        err = "cuMemCreate";
        const char* es = "?";
        cuGetErrorString(r, &es);
        std::printf("# rank %d: cuMemCreate for %s: %s\n", rank, names[v], es);
      } else if (v == 7 && (r = cuMemExportToShareableHandle(&fh, mh, CU_MEM_HANDLE_TYPE_FABRIC, 0)) != CUDA_SUCCESS) {
        err = "export";
        const char* es = "?";
        cuGetErrorString(r, &es);
        std::printf("# rank %d: export of %s: %s\n", rank, names[v], es);
        cuMemRelease(mh);
      } else {
        checkDrv(cuMemAddressReserve(&va, bytes, align, 0, 0), "reserve");
        checkDrv(cuMemMap(va, bytes, 0, mh, 0), "map");
        checkDrv(cuMemSetAccess(va, bytes, &acc, 1), "access");
        src = reinterpret_cast<void*>(va);
      }
      int ok = err == nullptr, all = 0;
      MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (!all) {
        if (rank == 0) std::printf("  %-36s not available (%s)\n", names[v], err ? err : "peer");
        if (src) { cuMemUnmap(va, bytes); cuMemAddressFree(va, bytes); cuMemRelease(mh); }
        continue;
      }
      if (v == 7) {
        CUmemFabricHandle pf{};
        MPI_Sendrecv(&fh, sizeof fh, MPI_BYTE, 1 - rank, 9, &pf, sizeof pf, MPI_BYTE, 1 - rank, 9, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        checkDrv(cuMemImportFromShareableHandle(&ph, &pf, CU_MEM_HANDLE_TYPE_FABRIC), "import fabric");
      } else {
        int fd = -1;
        checkDrv(cuMemExportToShareableHandle(&fd, mh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export");
        int pfd = fdOf(rank, fd);
        checkDrv(cuMemImportFromShareableHandle(&ph, reinterpret_cast<void*>(static_cast<uintptr_t>(pfd)),
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                 "import");
        close(pfd);
        close(fd);
      }
      checkDrv(cuMemAddressReserve(&pva, bytes, align, 0, 0), "reserve peer");
      checkDrv(cuMemMap(pva, bytes, 0, ph, 0), "map peer");
      checkDrv(cuMemSetAccess(pva, bytes, &acc, 1), "access peer");
      if (v == 4) {  // read-only first, then read-write: whether the second call re-makes the mapping
        CUmemAccessDesc ro = acc;
        ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
        checkDrv(cuMemSetAccess(pva, bytes, &ro, 1), "access peer read-only");
        checkDrv(cuMemSetAccess(pva, bytes, &acc, 1), "access peer again");
      }
      peer = reinterpret_cast<void*>(pva);
    } else if (v == 5) {
      cudaMemPoolProps pp{};
      pp.allocType = cudaMemAllocationTypePinned;
      pp.handleTypes = cudaMemHandleTypePosixFileDescriptor;
      pp.location.type = cudaMemLocationTypeDevice;
      pp.location.id = dev;
      check(cudaMemPoolCreate(&pool, &pp), "pool create");
      check(cudaMallocFromPoolAsync(&src, n, pool, st), "pool alloc");
      check(cudaStreamSynchronize(st), "sync");
      int fd = -1;
      check(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0), "pool export");
      cudaMemPoolPtrExportData mineData{}, peerData{};
      check(cudaMemPoolExportPointer(&mineData, src), "export pointer");
      MPI_Sendrecv(&mineData, sizeof mineData, MPI_BYTE, 1 - rank, 7, &peerData, sizeof peerData, MPI_BYTE, 1 - rank, 7,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      int pfd = fdOf(rank, fd);
      check(cudaMemPoolImportFromShareableHandle(&ipool, reinterpret_cast<void*>(static_cast<uintptr_t>(pfd)),
                                                 cudaMemHandleTypePosixFileDescriptor, 0),
            "pool import");
      cudaMemAccessDesc d{};
      d.location.type = cudaMemLocationTypeDevice;
      d.location.id = dev;
      d.flags = cudaMemAccessFlagsProtReadWrite;
      check(cudaMemPoolSetAccess(ipool, &d, 1), "pool access");
      check(cudaMemPoolImportPointer(&peer, ipool, &peerData), "import pointer");
      close(pfd);
      close(fd);
    } else {
      check(cudaMalloc(&src, n), "cudaMalloc");
      cudaIpcMemHandle_t h, ph2;
      check(cudaIpcGetMemHandle(&h, src), "ipc handle");
      MPI_Sendrecv(&h, sizeof h, MPI_BYTE, 1 - rank, 8, &ph2, sizeof ph2, MPI_BYTE, 1 - rank, 8, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      check(cudaIpcOpenMemHandle(&peer, ph2, cudaIpcMemLazyEnablePeerAccess), "ipc open");
    }
    check(cudaMemset(src, rank + 1, n), "fill");
    check(cudaDeviceSynchronize(), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) std::printf("  %-36s", names[v]);
    // both: 0 rank 0 pulls alone, 1 both pull, 2 both push (each writes its bytes into the peer's)
    for (int both = 0; both < 3; ++both) {
      for (size_t m : {n, size_t{8} << 20, size_t{1} << 20}) {
        if (both && m == (size_t{1} << 20)) continue;
        int reps = m == n ? 1 : m == (size_t{8} << 20) ? 16 : 128;
        std::vector<double> t;
        for (int it = 0; it < 23; ++it) {
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = MPI_Wtime();
          if (rank == 0 || both) {
            for (int k = 0; k < reps; ++k) {
              size_t o = (k * m) % n;
              if (both == 2)
                check(cudaMemcpyAsync(static_cast<char*>(peer) + o, static_cast<char*>(src) + o, m, cudaMemcpyDefault, st),
                      "push");
              else
                check(cudaMemcpyAsync(static_cast<char*>(dst) + o, static_cast<char*>(peer) + o, m, cudaMemcpyDefault, st),
                      "pull");
            }
            check(cudaStreamSynchronize(st), "sync");
          }
          double mt = MPI_Wtime() - t0, all = 0;
          MPI_Allreduce(&mt, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (it >= 3) t.push_back(all);
        }
        double gbs = double(m) * reps * (both ? 2 : 1) / (median(t) * 1e-6) / 1e9;
        if (rank == 0) std::printf(" %7.1f", gbs);
      }
      if (rank == 0) std::printf(both == 2 ? "\n" : " |");
    }
    std::fflush(stdout);
    check(cudaDeviceSynchronize(), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    if (v <= 4 || v == 7) {
      cuMemUnmap(pva, bytes);
      cuMemAddressFree(pva, bytes);
      cuMemRelease(ph);
      cuMemUnmap(va, bytes);
      cuMemAddressFree(va, bytes);
      cuMemRelease(mh);
    } else if (v == 5) {
      check(cudaFreeAsync(peer, st), "free import");
      check(cudaStreamSynchronize(st), "sync");
      MPI_Barrier(MPI_COMM_WORLD);
      check(cudaFreeAsync(src, st), "free pool memory");
      check(cudaStreamSynchronize(st), "sync");
      cudaMemPoolDestroy(ipool);
      cudaMemPoolDestroy(pool);
    } else {
      cudaIpcCloseMemHandle(peer);
      MPI_Barrier(MPI_COMM_WORLD);
      cudaFree(src);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  cudaFree(dst);
  cudaStreamDestroy(st);
}

// A resident copy kernel (forty-seventh session, `-only spin`): an 8-byte message's copy on the
// copy engine costs its issue (1.5-3.5 us of CPU time) and ~5 us until an event query sees it end;
// a bare two-process exchange is ~8 us a hop. Here each rank's GPU runs one block that never
// leaves between messages: it polls a word of mapped host memory (the ring), copies the message
// with its threads over NVLink (into the peer's cuMem memory), fences to system scope and writes
// the message's number to mapped host memory that both its CPU (done) and the peer's CPU (a word
// of a shared segment registered by both) read. Ping-pong between the ranks (8 B, 4 KiB, 64 KiB),
// the half round trip against the same exchange on the copy engine (issue, event, a CPU store of
// the flag); then rank 0 alone, ring to done against copy-and-event. Every message adds one to
// each word, and every receive checks the word it read, so a message seen before its data fails.
struct SpinBox {
  unsigned long long ring;  // the CPU writes the message's number after the fields below
  unsigned long long src, dst, n;
  unsigned long long pad0[4];
  unsigned long long done;  // the kernel: the number of the last message copied (fenced)
  unsigned long long got;   // the first word it read from the source
  unsigned long long pad1[6];
};

__device__ unsigned long long globalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// Copies message after message until the ring holds ~0 or nothing came for two seconds.
__global__ void spinKernel(volatile SpinBox* box, volatile unsigned long long* notify, unsigned long long seq) {
  __shared__ unsigned long long sSeq, sSrc, sDst, sN;
  __shared__ int sStop;
  for (;;) {
    if (threadIdx.x == 0) {
      unsigned long long r, t0 = globalNs();
      sStop = 0;
      while ((r = box->ring) <= seq) {
        if (globalNs() - t0 > 2000000000ull) {
          sStop = 1;
          break;
        }
      }
      if (r == ~0ull) sStop = 1;
      if (!sStop) {
        sSeq = r;
        sSrc = box->src;
        sDst = box->dst;
        sN = box->n;
      }
    }
    __syncthreads();
    if (sStop) return;
    seq = sSeq;
    const unsigned long long* src = reinterpret_cast<const unsigned long long*>(sSrc);
    unsigned long long* dst = reinterpret_cast<unsigned long long*>(sDst);
    unsigned long long words = sN / 8, first = 0;
    for (unsigned long long i = threadIdx.x; i < words; i += blockDim.x) {
      unsigned long long v = src[i];
      if (i == 0) first = v;
      dst[i] = v + 1;
    }
    __threadfence_system();
    __syncthreads();
    if (threadIdx.x == 0) {
      box->got = first;
      box->done = seq;
      if (notify) *notify = seq;
    }
    __syncthreads();
  }
}

void spinWait(volatile unsigned long long* w, unsigned long long want, const char* what) {
  double t0 = MPI_Wtime();
  while (*w < want) {
    if (MPI_Wtime() - t0 > 2) {
      std::fprintf(stderr, "cgdr-vis-probe: spin: %s stuck at %llu (want %llu)\n", what, *w, want);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

void spin(int rank, cudaStream_t s, cudaEvent_t ev, int iters, void* mine, void* peer) {
  SpinBox* box = nullptr;
  check(cudaHostAlloc(&box, sizeof(SpinBox), cudaHostAllocMapped | cudaHostAllocPortable), "spin box");
  std::memset(box, 0, sizeof *box);
  void* boxDev = nullptr;
  check(cudaHostGetDevicePointer(&boxDev, box, 0), "spin box device pointer");
  // The shared flags: word 16 * r is written by rank r's side after its copy.
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  char name[64];
  std::snprintf(name, sizeof name, "/cgdr-spin-probe-%d", pid);
  int fd = -1;
  if (rank == 0) fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 1) fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0 || (rank == 0 && ftruncate(fd, 4096) != 0)) {
    std::fprintf(stderr, "cgdr-vis-probe: spin: shm %s: %s\n", name, std::strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  void* seg = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) shm_unlink(name);
  if (seg == MAP_FAILED) {
    std::fprintf(stderr, "cgdr-vis-probe: spin: mmap: %s\n", std::strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  check(cudaHostRegister(seg, 4096, cudaHostRegisterMapped | cudaHostRegisterPortable), "register shared flags");
  void* segDev = nullptr;
  check(cudaHostGetDevicePointer(&segDev, seg, 0), "shared flags device pointer");
  auto flags = static_cast<volatile unsigned long long*>(seg);
  auto flagsDev = static_cast<unsigned long long*>(segDev);
  const int other = 1 - rank;
  const size_t offB = size_t{1} << 20;  // rank 0's buffer at mine + 0, rank 1's at mine + 1 MiB
  char* src = static_cast<char*>(mine) + (rank == 0 ? 0 : offB);
  char* dst = static_cast<char*>(peer) + (rank == 0 ? offB : 0);
  unsigned long long seq = 0;  // message numbers, the same on both ranks, rising across variants
  const int threads[] = {32, 256};
  if (rank == 0)
    std::printf("# spin: ping-pong half round trip, median us: copy engine (memcpy+event+flag store) | resident "
                "kernel 32 threads | 256 threads; then rank 0 alone, issue/ring to seen done: memcpy+event | kernel 32 | 256\n");
  for (size_t n : {size_t{8}, size_t{4096}, size_t{65536}}) {
    // Every word of rank 0's buffer starts at 1000 (rank 1's is written before it is read).
    std::vector<unsigned long long> init(n / 8, 1000);
    check(cudaMemcpy(src, init.data(), n, cudaMemcpyHostToDevice), "spin init");
    unsigned long long expect = 1000;  // what rank 0's next message carries in each word
    // One message on the copy engine (issued, its end seen by an event query), or through this
    // rank's kernel (posted, its `done` awaited).
    auto engineCopy = [&] {
      check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s), "spin copy");
      check(cudaEventRecord(ev, s), "record");
      cudaError_t q;
      while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) {
      }
      check(q, "query");
    };
    auto kernelCopy = [&](unsigned long long k, const char* what) {
      box->src = reinterpret_cast<unsigned long long>(src);
      box->dst = reinterpret_cast<unsigned long long>(dst);
      box->n = n;
      std::atomic_thread_fence(std::memory_order_seq_cst);
      box->ring = k;
      spinWait(&box->done, k, what);
    };
    double res[3], alone[3];
    int bad = 0;
    for (int v = 0; v < 3; ++v) {
      if (v > 0) {
        box->ring = seq;
        spinKernel<<<1, threads[v - 1], 0, s>>>(static_cast<volatile SpinBox*>(boxDev), flagsDev + 16 * rank, seq);
        check(cudaGetLastError(), "spin kernel launch");
      }
      MPI_Barrier(MPI_COMM_WORLD);
      std::vector<double> hop;
      for (int it = 0; it < iters + 20; ++it) {
        ++seq;
        double t0 = MPI_Wtime();
        for (int turn = 0; turn < 2; ++turn) {
          if (turn != rank) {
            spinWait(flags + 16 * other, seq, "peer's flag");
            continue;
          }
          if (v == 0) {
            engineCopy();
            flags[16 * rank] = seq;
          } else {
            kernelCopy(seq, "own kernel");
            // rank 0 reads its buffer as rank 1's kernel left it; rank 1 reads what rank 0's wrote
            unsigned long long want = rank == 0 ? expect : expect + 1;
            if (box->got != want && bad++ < 3)
              std::printf("  spin: rank %d message %llu read %llu, expected %llu\n", rank, seq, box->got, want);
          }
        }
        if (v > 0) expect += 2;
        if (it >= 20) hop.push_back((MPI_Wtime() - t0) / 2);
      }
      res[v] = median(hop);
      if (v > 0 && rank == 0) {  // every word of rank 0's buffer as the last round trip left it
        std::vector<unsigned long long> h(n / 8);
        check(cudaMemcpy(h.data(), src, n, cudaMemcpyDeviceToHost), "spin read back");
        for (size_t w = 0; w < h.size(); ++w)
          if (h[w] != expect && bad++ < 3) std::printf("  spin: word %zu holds %llu, expected %llu\n", w, h[w], expect);
      }
      // Rank 0 alone: the same copy, its end seen by this CPU.
      MPI_Barrier(MPI_COMM_WORLD);
      std::vector<double> one;
      if (rank == 0) {
        for (int it = 0; it < iters + 20; ++it) {
          double t0 = MPI_Wtime();
          if (v == 0) engineCopy();
          else kernelCopy(++seq, "own kernel alone");
          if (it >= 20) one.push_back(MPI_Wtime() - t0);
        }
        alone[v] = median(one);
      }
      MPI_Bcast(&seq, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
      if (v > 0) {
        box->ring = ~0ull;
        check(cudaStreamSynchronize(s), "spin kernel stop");
      }
      // The copy engine's rounds and rank 0's solo kernel copies moved rank 1's buffer without
      // adding one on the way back: start the next variant from a known value again.
      check(cudaMemcpy(src, init.data(), n, cudaMemcpyHostToDevice), "spin init");
      expect = 1000;
      MPI_Barrier(MPI_COMM_WORLD);
    }
    int allBad = 0;
    MPI_Allreduce(&bad, &allBad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("  %6zu B  %6.2f | %6.2f | %6.2f   alone %6.2f | %6.2f | %6.2f   data %s\n", n, res[0], res[1], res[2],
                  alone[0], alone[1], alone[2], allBad ? "WRONG" : "ok");
  }
  cudaHostUnregister(seg);
  munmap(seg, 4096);
  cudaFreeHost(box);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bool one = argc > 1 && std::string(argv[1]) == "one";
  int iters = 2000;
  std::string only;  // -only batch: that section alone
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "-i") iters = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "-only") only = argv[++i];
  }
  if (one) setenv("CUDA_VISIBLE_DEVICES", rank ? "1" : "0", 1);
  int ngpu = 0;
  if (size != 2 || cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
    if (rank == 0) std::printf("SKIP cgdr-vis-probe: needs 2 ranks and a GPU\n");
    MPI_Finalize();
    return 77;
  }
  int dev = one ? 0 : rank % ngpu;
  check(cudaSetDevice(dev), "cudaSetDevice");
  check(cudaFree(nullptr), "context");
  const size_t cap = size_t{130} << 20;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  checkDrv(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
  size_t bytes = (cap + gran - 1) / gran * gran;
  CUmemAccessDesc acc{};
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = dev;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  auto mapped = [&](CUmemGenericAllocationHandle h) {
    CUdeviceptr p = 0;
    checkDrv(cuMemAddressReserve(&p, bytes, 0, 0, 0), "reserve");
    checkDrv(cuMemMap(p, bytes, 0, h, 0), "map");
    checkDrv(cuMemSetAccess(p, bytes, &acc, 1), "access");
    return reinterpret_cast<void*>(p);
  };
  CUmemGenericAllocationHandle mh;
  checkDrv(cuMemCreate(&mh, bytes, &prop, 0), "cuMemCreate");
  void* mine = mapped(mh);
  void* mine2 = nullptr;
  check(cudaMalloc(&mine2, cap), "cudaMalloc");
  int fd = -1;
  checkDrv(cuMemExportToShareableHandle(&fd, mh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export");
  int peerFd = fdOf(rank, fd);
  CUmemGenericAllocationHandle ph;
  checkDrv(cuMemImportFromShareableHandle(&ph, reinterpret_cast<void*>(static_cast<uintptr_t>(peerFd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           "import");
  void* peer = mapped(ph);
  MPI_Barrier(MPI_COMM_WORLD);

  cudaStream_t s;
  cudaEvent_t ev;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "event");
  if (rank == 0 && only == "batch") {
    std::printf("# visibility: %s; N copies: issue/total us, memcpy each vs one cudaMemcpyBatchAsync\n",
                one ? "each rank sees only its GPU" : "both GPUs");
    batch(s, ev, iters, mine, peer, "pull V<-peer");
    batch(s, ev, iters, mine2, peer, "pull D<-peer");
    std::fflush(stdout);
  }
  if (rank == 0 && only.empty()) {
    std::printf("# visibility: %s (%d device(s) visible to rank 0)\n", one ? "each rank sees only its GPU" : "both GPUs",
                ngpu);
    std::printf("# per pair and size: issue/total us of cudaMemcpyAsync, the captured graph, the graph re-pointed per copy\n");
    void* mine3 = nullptr;
    void* host = nullptr;
    check(cudaMalloc(&mine3, cap), "cudaMalloc");
    check(cudaHostAlloc(&host, cap, cudaHostAllocPortable), "cudaHostAlloc");
    struct Pair {
      const char* name;
      void* dst;
      const void* src;
    } pairs[] = {{"pull V<-peer", mine, peer},   {"push peer<-V", peer, mine},  {"pull D<-peer", mine2, peer},
                 {"push peer<-D", peer, mine2},  {"local D<-V", mine2, mine},   {"local D<-D", mine3, mine2},
                 {"D2H H<-D", host, mine2},      {"H2D D<-H", mine2, host}};
    for (size_t n : {size_t{8}, size_t{65536}, size_t{1} << 20, size_t{64} << 20}) {
      int reps = n >= (size_t{64} << 20) ? iters / 10 : iters;
      for (auto& pr : pairs) {
        if (n >= (size_t{64} << 20) && pr.dst != mine && pr.dst != peer) continue;
        cudaGraph_t g;
        cudaGraphExec_t exec = nullptr;
        double ti = MPI_Wtime();
        check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
        check(cudaMemcpyAsync(pr.dst, pr.src, n, cudaMemcpyDefault, s), "capture copy");
        check(cudaStreamEndCapture(s, &g), "end capture");
        check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
        ti = MPI_Wtime() - ti;
        cudaGraphNode_t node;
        size_t nn = 1;
        check(cudaGraphGetNodes(g, &node, &nn), "nodes");
        std::printf("  %-14s %8zu  instantiate %.1f us |", pr.name, n, ti * 1e6);
        for (int kind = 0; kind < 3; ++kind) {  // memcpy, graph as captured, graph re-pointed each time
          std::vector<double> issue, total;
          for (int k = 0; k < reps + 20; ++k) {
            size_t off = (k & 1) ? (cap - n) / 2 / 256 * 256 : 0;
            double t0 = MPI_Wtime();
            if (kind == 0) check(cudaMemcpyAsync(pr.dst, pr.src, n, cudaMemcpyDefault, s), "copy");
            if (kind == 2)
              check(cudaGraphExecMemcpyNodeSetParams1D(exec, node, static_cast<char*>(pr.dst) + off,
                                                       static_cast<const char*>(pr.src) + off, n, cudaMemcpyDefault),
                    "set params");
            if (kind > 0) check(cudaGraphLaunch(exec, s), "graph launch");
            timeToDone(s, ev, t0, k >= 20, issue, total);
          }
          double tt = median(total);
          std::printf(" %s %5.2f/%7.2f", kind == 0 ? "memcpy" : kind == 1 ? "graph" : "re-pointed", median(issue), tt);
          if (n >= (size_t{1} << 20)) std::printf(" (%.0f GB/s)", n / tt / 1e3);
        }
        std::printf("\n");
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(g);
      }
    }
    callCosts(s, ev, mine2, host);
    split({{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}}, cap);
    smCopy({{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}}, cap);
    completion(s, ev, iters, {{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}, {"H2D D<-H", mine2, host},
                              {"D2H H<-D", host, mine2}});
    std::fflush(stdout);
  }
  if (only.empty()) coop(rank, mine, peer, cap);
  if (only.empty() || only == "rail") rail(rank, mine, peer, cap);
  if (only == "import") importPaths(rank, dev, one);
  if (rank == 0 && only == "kbatch") {
    std::printf("# visibility: %s; N small pulls: issue/total us, copy engine vs one kernel\n",
                one ? "each rank sees only its GPU" : "both GPUs");
    kbatch(s, ev, iters, mine, peer, "pull V<-peer", one);
    kbatch(s, ev, iters, mine2, peer, "pull D<-peer", one);
    kbatch(s, ev, iters, peer, mine2, "push peer<-D", one);
    std::fflush(stdout);
  }
  if (rank == 0 && only == "bell") {
    std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    bell(s, ev, iters, {{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}, {"push peer<-D", peer, mine2}});
    std::fflush(stdout);
  }
  if (rank == 0 && only == "align") {
    std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    align(s, ev, iters, {{"push peer<-V", peer, mine}, {"push peer<-D", peer, mine2}, {"pull V<-peer", mine, peer}});
    std::fflush(stdout);
  }
  if (rank == 0 && only == "evnode") {
    std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    evnode(s, ev, iters, {{"push peer<-V", peer, mine}, {"push peer<-D", peer, mine2}, {"pull V<-peer", mine, peer}});
    std::fflush(stdout);
  }
  if (only == "rail2") rail2(rank, mine, peer, cap);
  if (only == "spin") {
    if (rank == 0) std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    spin(rank, s, ev, iters, mine, peer);
    std::fflush(stdout);
  }
  if (rank == 0 && only == "wstreams") {
    std::printf("# visibility: %s; windows of copies, one stream vs round-robin over several\n",
                one ? "each rank sees only its GPU" : "both GPUs");
    wstreams(iters, peer, mine, "push peer<-V", cap);
    wstreams(iters, peer, mine2, "push peer<-D", cap);
    wstreams(iters, mine, peer, "pull V<-peer", cap);
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
