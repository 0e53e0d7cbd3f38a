// cgdr-vis-probe: a copy queued behind a bell, the first event query held back, an event node
// inside the copy's graph.
#include "probe.hpp"

namespace vp {

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

}  // namespace vp
