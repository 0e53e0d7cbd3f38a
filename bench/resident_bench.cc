// The resident copy kernel (mem/resident.hpp) alone, without MPI: one copy at a time from GPU 0 to
// GPU 1 (over NVLink where two GPUs are visible; else within GPU 0), each waited for before the
// next, as a ping-pong's sender posts them, against the same copies on the copy engine
// (cudaMemcpyAsync, its completion polled with cudaEventQuery). It shows what the kernel's blocks
// (CGDR_CUDA_RESIDENT_BLOCKS) and limit (CGDR_CUDA_RESIDENT_LIMIT) give per size before a run
// through MPI does:
//   CGDR_CUDA_RESIDENT=always CGDR_CUDA_RESIDENT_BLOCKS=8 CGDR_CUDA_RESIDENT_LIMIT=512K
//   cgdr-resident-bench [-i ITERS] [-m MIN:MAX]
// Prints, per size: the median and 90th percentile of post-to-done time on the kernel and on
// the engine (us), and how many of the timed copies the kernel took (the others, not taken, are
// left out of its times).
// With -l SECONDS (any CGDR_CUDA_RESIDENT): one copy of MIN bytes at a time, 10 us apart, for that
// long, each on the kernel where it takes it, else on the engine, as a ping-pong's sender beside
// another process's work on the GPU (bench/gpu-suite.sh step `neighbour`): the median and 99th
// percentile of all, and how often the kernel left switched out (CGDR_CUDA_RESIDENT_BACKOFF).
// With -p BYTES as well: this process keeps PCIe busy meanwhile, copying BYTES from page-locked
// host memory to GPU 0 and back on another stream, again and again (the kernel reads its mailbox
// over PCIe: its looks must not come so far apart that it takes itself for switched out).
// With -y ITERS: the time of a cudaDeviceSynchronize right after a copy of MIN bytes seen done,
// ITERS times each: after the kernel's copy with the kernel left running (it stays for
// CGDR_CUDA_RESIDENT_IDLE), after it was asked to leave (mem::residentLeave, as cgdr's
// cudaDeviceSynchronize and cudaFree do), and after a copy on the copy engine (p50 / p90, us).
// With -b BURST [-g US] (any CGDR_CUDA_RESIDENT): ITERS bursts of BURST copies of MIN bytes posted
// back to back, US (200) apart, the kernel leaving between them: the time of a burst (first post
// to all done, p50 / p90; and to its last post), how many the kernel took and how many waited for its start
// (CGDR_CUDA_RESIDENT_START_WAIT).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "mem/resident.hpp"
#include "user_side.hpp"

using namespace cgdr;
using Clock = std::chrono::steady_clock;

namespace {

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

void ok(cudaError_t e, const char* what) { user::cudaOrExit(e, "cgdr-resident-bench", what); }
double pct(const std::vector<double>& v, double p) { return user::percentile(v, p); }

// One copy on the copy engine, its completion polled.
void engineCopy(char* dst, const char* src, std::size_t n, cudaStream_t stream, cudaEvent_t ev) {
  ok(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
  ok(cudaEventRecord(ev, stream), "cudaEventRecord");
  cudaError_t q;
  while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) {
  }
  ok(q, "cudaEventQuery");
}

// Waits for copy `seq` of the resident kernel of GPU 0 (a failed copy ends the program).
void residentWait(std::uint64_t seq) {
  base::Status err;
  int r;
  while ((r = mem::residentPoll(0, seq, &err)) == 0) {
  }
  if (r > 0) return;
  std::fprintf(stderr, "cgdr-resident-bench: %s\n", err.message().c_str());
  std::exit(1);
}

// -y: a cudaDeviceSynchronize timed after each of `iters` copies, per way.
void syncAfter(char* dst, const char* src, std::size_t n, int iters, cudaStream_t stream, cudaEvent_t ev) {
  const mem::ResidentCounts before = mem::residentCounts();
  std::vector<double> t[3];
  for (int way = 0; way < 3; ++way)
    for (int k = 0; k < iters;) {
      if (way < 2) {
        std::uint64_t seq = mem::residentPost(0, dst, src, n);
        if (!seq) {  // not running: started, and this round again
          engineCopy(dst, src, n, stream, ev);
          mem::residentWake(0);
          continue;
        }
        residentWait(seq);
        if (way == 1) mem::residentLeave();
      } else {
        engineCopy(dst, src, n, stream, ev);
      }
      const auto t0 = Clock::now();
      ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
      t[way].push_back(us(Clock::now() - t0));
      ++k;
    }
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("cudaDeviceSynchronize after a copy of %zu B (p50 / p90 us of %d): kernel left running %.2f / %.2f, "
              "asked to leave %.2f / %.2f, copy engine %.2f / %.2f; %llu launches, %llu left when asked\n",
              n, iters, pct(t[0], 0.5), pct(t[0], 0.9), pct(t[1], 0.5), pct(t[1], 0.9), pct(t[2], 0.5),
              pct(t[2], 0.9), after.launches - before.launches, after.leftAsked - before.leftAsked);
}

// -p: copies of `bytes` host -> GPU 0 -> host, the next pair issued once the last is done.
struct PcieTraffic {
  std::size_t bytes = 0;
  char* host = nullptr;
  char* dev = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev = nullptr;
  unsigned long long pairs = 0;
  void start() {
    if (!bytes) return;
    ok(cudaHostAlloc(&host, bytes, cudaHostAllocDefault), "cudaHostAlloc");
    ok(cudaMalloc(&dev, bytes), "cudaMalloc");
    ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
    ok(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
    issue();
  }
  void issue() {
    ok(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, stream), "cudaMemcpyAsync");
    ok(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
    ok(cudaEventRecord(ev, stream), "cudaEventRecord");
  }
  void step() {  // (between the load's copies)
    if (!bytes) return;
    cudaError_t q = cudaEventQuery(ev);
    if (q == cudaErrorNotReady) return;
    ++pairs;
    ok(q, "cudaEventQuery");
    issue();
  }
};

// -l: copies of n bytes 10 us apart for `seconds` (with -p, PCIe traffic beside them).
void load(char* dst, const char* src, std::size_t n, double seconds, std::size_t pcieBytes, cudaStream_t stream,
          cudaEvent_t ev) {
  PcieTraffic pcie;
  pcie.bytes = pcieBytes;
  pcie.start();
  const mem::ResidentCounts before = mem::residentCounts();
  std::vector<double> all;
  unsigned long long byKernel = 0;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (auto t = t0; t < end; t = Clock::now()) {
    if (std::uint64_t seq = mem::residentPost(0, dst, src, n)) {
      residentWait(seq);
      ++byKernel;
    } else {
      engineCopy(dst, src, n, stream, ev);
      mem::residentWake(0);
    }
    const auto done = Clock::now();
    all.push_back(us(done - t));
    pcie.step();
    while (Clock::now() - done < std::chrono::microseconds(10)) {
    }
  }
  mem::residentQuiesce();
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("load: %zu copies of %zu B in %.2f s (%llu by the kernel in %llu launches): p50 %.2f us, p99 %.2f us; "
              "it left switched out %llu times, longest %.1f us between looks\n",
              all.size(), n, us(Clock::now() - t0) / 1e6, byKernel, after.launches - before.launches, pct(all, 0.5),
              pct(all, 0.99), after.turned - before.turned, static_cast<double>(after.longestNs) / 1e3);
  if (pcieBytes)
    std::printf("load: beside it %llu pairs of %zu-byte copies host -> GPU -> host (%.1f GB/s each way)\n", pcie.pairs,
                pcieBytes, static_cast<double>(pcie.pairs) * static_cast<double>(pcieBytes) / seconds / 1e9);
}

// -b: bursts of `burst` copies of n bytes into distinct targets, posted back to back as a caller
// posts them (taken by the kernel, or issued on the copy engine without waiting, the kernel then
// woken), all waited for, then `gapUs` without a copy (the kernel leaves meanwhile), `iters` times.
void bursts(char* dst, const char* src, std::size_t n, int burst, int iters, double gapUs, cudaStream_t stream,
            cudaEvent_t ev) {
  const mem::ResidentCounts before = mem::residentCounts();
  std::vector<double> t, posted;
  unsigned long long byKernel = 0;
  for (int k = 0; k < iters + 10; ++k) {
    const auto t0 = Clock::now();
    std::uint64_t last = 0;
    bool engine = false;
    for (int m = 0; m < burst; ++m) {
      if (std::uint64_t seq = mem::residentPost(0, dst + m * n, src + m * n, n)) {
        last = seq;
        if (k >= 10) ++byKernel;
      } else {
        ok(cudaMemcpyAsync(dst + m * n, src + m * n, n, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
        engine = true;
        mem::residentWake(0);
      }
    }
    if (k >= 10) posted.push_back(us(Clock::now() - t0));
    if (engine) {
      ok(cudaEventRecord(ev, stream), "cudaEventRecord");
      cudaError_t q;
      while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) {
      }
      ok(q, "cudaEventQuery");
    }
    if (last) residentWait(last);
    const auto done = Clock::now();
    if (k >= 10) t.push_back(us(done - t0));
    while (us(Clock::now() - done) < gapUs) {
    }
  }
  const mem::ResidentCounts after = mem::residentCounts();
  const unsigned long long waited = after.waited - before.waited;
  std::printf("bursts of %d copies of %zu B, %.0f us apart (CGDR_CUDA_RESIDENT_START_WAIT=%s): p50 %.2f us, p90 %.2f "
              "us (all posted at p50 %.2f us); %llu of %d copies by the kernel in %llu launches, %llu waited for its start "
              "(%.2f us on average)\n",
              burst, n, gapUs, std::getenv("CGDR_CUDA_RESIDENT_START_WAIT") ?: "(default)", pct(t, 0.5), pct(t, 0.9),
              pct(posted, 0.5),
              byKernel, burst * iters, after.launches - before.launches, waited,
              waited ? static_cast<double>(after.waitedNs - before.waitedNs) / 1e3 / waited : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 2000;
  std::size_t lo = 8, hi = 1 << 20;
  double seconds = 0;
  int syncIters = 0;
  std::size_t pcieBytes = 0;
  int burst = 0;
  double gapUs = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-b")) {
      burst = std::atoi(argv[i + 1]);
      if (burst < 1 || burst > 4096) {
        std::fprintf(stderr, "cgdr-resident-bench: -b BURST (1-4096 copies)\n");
        return 2;
      }
    } else if (!std::strcmp(argv[i], "-g")) {
      gapUs = std::atof(argv[i + 1]);
      if (gapUs < 0) {
        std::fprintf(stderr, "cgdr-resident-bench: -g MICROSECONDS (>= 0)\n");
        return 2;
      }
    } else if (!std::strcmp(argv[i], "-p")) {
      auto b = base::parseBytes(argv[i + 1]);
      if (!b || *b == 0) {
        std::fprintf(stderr, "cgdr-resident-bench: -p BYTES (> 0)\n");
        return 2;
      }
      pcieBytes = *b;
    } else if (!std::strcmp(argv[i], "-y")) {
      syncIters = std::max(10, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "-l")) {
      seconds = std::atof(argv[i + 1]);
      if (seconds <= 0) {
        std::fprintf(stderr, "cgdr-resident-bench: -l SECONDS (> 0)\n");
        return 2;
      }
    } else if (!std::strcmp(argv[i], "-i")) {
      iters = std::max(10, std::atoi(argv[i + 1]));
    } else if (!std::strcmp(argv[i], "-m")) {
      std::string r = argv[i + 1];
      auto colon = r.find(':');
      auto a = base::parseBytes(r.substr(0, colon));
      auto b = base::parseBytes(colon == std::string::npos ? r : r.substr(colon + 1));
      if (!a || !b || *a == 0 || *a > *b) {
        std::fprintf(stderr, "cgdr-resident-bench: -m MIN:MAX (sizes, MIN > 0)\n");
        return 2;
      }
      lo = *a;
      hi = *b;
    } else {
      std::fprintf(stderr, "usage: cgdr-resident-bench [-i ITERS] [-m MIN:MAX] [-l SECONDS [-p BYTES]] [-y ITERS] "
                           "[-b BURST [-g US]]\n");
      return 2;
    }
  }
  const char* mode = std::getenv("CGDR_CUDA_RESIDENT");
  if (seconds == 0 && burst == 0 && (!mode || std::string(mode) != "always")) {
    std::fprintf(stderr, "cgdr-resident-bench: run with CGDR_CUDA_RESIDENT=always\n");
    return 2;
  }
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus < 1) {
    std::fprintf(stderr, "cgdr-resident-bench: no GPU\n");
    return 77;
  }
  int peer = gpus > 1 ? 1 : 0;
  if (peer) {
    int can = 0;
    cudaDeviceCanAccessPeer(&can, 0, 1);
    if (!can) peer = 0;
  }
  char *src = nullptr, *dst = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t ev = nullptr;
  ok(cudaSetDevice(peer), "cudaSetDevice");
  const std::size_t room = std::max(hi, static_cast<std::size_t>(std::max(burst, 1)) * lo);  // (-b: a target each)
  ok(cudaMalloc(&dst, room), "cudaMalloc");
  ok(cudaSetDevice(0), "cudaSetDevice");
  ok(cudaMalloc(&src, room), "cudaMalloc");
  ok(cudaMemset(src, 0x5a, room), "cudaMemset");
  ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  ok(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
  if (peer) {
    cudaError_t e = cudaDeviceEnablePeerAccess(peer, 0);
    if (e != cudaErrorPeerAccessAlreadyEnabled) ok(e, "cudaDeviceEnablePeerAccess");
  }
  if (seconds > 0) {
    load(dst, src, lo, seconds, pcieBytes, stream, ev);
    return 0;
  }
  if (burst > 0) {
    bursts(dst, src, lo, burst, iters, gapUs, stream, ev);
    return 0;
  }
  if (syncIters > 0) {
    syncAfter(dst, src, lo, syncIters, stream, ev);
    return 0;
  }
  std::printf("# GPU 0 -> GPU %d (%s); CGDR_CUDA_RESIDENT_BLOCKS=%s _SOLO=%s _LIMIT=%s; %d copies a size\n", peer,
              peer ? "peer" : "the same GPU", std::getenv("CGDR_CUDA_RESIDENT_BLOCKS") ?: "(default)",
              std::getenv("CGDR_CUDA_RESIDENT_SOLO") ?: "(default)",
              std::getenv("CGDR_CUDA_RESIDENT_LIMIT") ?: "(default)", iters);
  std::printf("%-10s %10s %10s %10s %10s %8s\n", "bytes", "kernel p50", "kernel p90", "engine p50", "engine p90",
              "taken");
  const mem::ResidentCounts before = mem::residentCounts();
  for (std::size_t n = lo; n <= hi; n *= 2) {
    std::vector<double> kernel, engine;
    const bool fits = mem::residentFits(n);
    for (int k = 0; fits && k < iters + 100; ++k) {  // the first 100: the kernel starts
      auto t0 = Clock::now();
      std::uint64_t seq = mem::residentPost(0, dst, src, n);
      if (!seq) {
        engineCopy(dst, src, n, stream, ev);
        mem::residentWake(0);
        continue;
      }
      residentWait(seq);
      if (k >= 100) kernel.push_back(us(Clock::now() - t0));
    }
    mem::residentQuiesce();
    for (int k = 0; k < iters + 100; ++k) {
      auto t0 = Clock::now();
      engineCopy(dst, src, n, stream, ev);
      if (k >= 100) engine.push_back(us(Clock::now() - t0));
    }
    std::printf("%-10zu %10.2f %10.2f %10.2f %10.2f %8zu\n", n, pct(kernel, 0.5), pct(kernel, 0.9), pct(engine, 0.5),
                pct(engine, 0.9), kernel.size());
    if (n > hi / 2) break;
  }
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("# by the kernel %llu in %llu launches; batches shared with its helpers %llu\n",
              after.copies - before.copies, after.launches - before.launches, after.crewed - before.crewed);
  return 0;
}
