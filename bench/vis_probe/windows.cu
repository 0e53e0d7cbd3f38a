// cgdr-vis-probe: windows of copies (over several streams, as one kernel, as one batch), what
// single calls cost, and the host rail with traffic both ways.
#include "probe.hpp"

namespace vp {

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

}  // namespace vp
