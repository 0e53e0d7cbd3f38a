// cgdr-vis-probe: a resident copy kernel rung through mapped host memory against the copy engine.
#include "probe.hpp"

namespace vp {

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

}  // namespace vp
