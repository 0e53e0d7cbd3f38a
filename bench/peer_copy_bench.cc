// The floor for GPU-to-GPU messages between two ranks: a bare cudaMemcpyPeerAsync from GPU A to
// GPU B in one process, nothing else. Latency: one copy then a stream synchronize, median over
// iterations (what a ping-pong's one-way time is compared with), and the mean of the same
// iterations (the last column: the statistic cgdr-bench and OSU's benchmarks report, a loop's time
// over its iterations, stalls included). Bandwidth: a window of copies back to back, then one
// synchronize (as osu_bw / cgdr-bench bw count). Prints a table and, with --json FILE, writes
// {"latency": {size: us}, "latency_mean": {size: us}, "bw": {size: GB/s}}.
// More latency columns show what the engine's paths cost at their floor: "push+event" (the copy
// on the source GPU's stream, completion seen by polling an event), "pull+sync" and "pull+event"
// (the destination GPU pulls with cudaMemcpyAsync, as cuda-ipc's receiver does),
// "stage 2 sync" (a local copy into a staging buffer, synchronize, then the peer pull,
// synchronize: cuda-vmm-stage with a host round trip between its copies) and "stage chained"
// (the same two copies ordered on the GPU, one synchronize: what GPU-side chaining could reach).
//   cgdr-peer-copy-bench [--from 0] [--to 1] [-m MIN:MAX] [-i N] [--json FILE]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "user_side.hpp"

namespace {

void check(cudaError_t e, const char* what) { cgdr::user::cudaOrExit(e, "cgdr-peer-copy-bench", what); }

}  // namespace

int main(int argc, char** argv) {
  int from = 0, to = 1, iters = 1000;
  std::size_t lo = 1, hi = std::size_t{256} << 20;
  std::string json;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--from" && i + 1 < argc) from = std::atoi(argv[++i]);
    else if (a == "--to" && i + 1 < argc) to = std::atoi(argv[++i]);
    else if (a == "-i" && i + 1 < argc) iters = std::atoi(argv[++i]);
    else if (a == "--json" && i + 1 < argc) json = argv[++i];
    else if (a == "-m" && i + 1 < argc) {
      std::string m = argv[++i];
      auto c = m.find(':');
      if (c == std::string::npos) hi = cgdr::user::parseSize(m.c_str());
      else {
        lo = cgdr::user::parseSize(m.substr(0, c).c_str());
        hi = cgdr::user::parseSize(m.substr(c + 1).c_str());
      }
    } else {
      std::fprintf(stderr, "usage: cgdr-peer-copy-bench [--from A] [--to B] [-m MIN:MAX] [-i N] [--json FILE]\n");
      return 2;
    }
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n <= std::max(from, to)) {
    std::printf("SKIP cgdr-peer-copy-bench: needs GPUs %d and %d (found %d)\n", from, to, n);
    return 77;
  }
  // Per GPU: its buffer of `hi` bytes, peer access to the other GPU, a stream and an event.
  struct Side {
    void* buf = nullptr;
    cudaStream_t stream = nullptr;
    cudaEvent_t event = nullptr;
    bool peer = false;
  };
  auto side = [&](int dev, int other, const char* what) {
    Side x;
    check(cudaSetDevice(dev), "cudaSetDevice");
    check(cudaMalloc(&x.buf, hi), what);
    int can = 0;
    cudaDeviceCanAccessPeer(&can, dev, other);
    x.peer = can && dev != other;
    if (x.peer) check(cudaDeviceEnablePeerAccess(other, 0), "cudaDeviceEnablePeerAccess");
    check(cudaStreamCreateWithFlags(&x.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    check(cudaEventCreateWithFlags(&x.event, cudaEventDisableTiming), "cudaEventCreate");
    return x;
  };
  Side d = side(to, from, "cudaMalloc (destination)");
  Side sr = side(from, to, "cudaMalloc (source)");  // leaves the source GPU current
  void *src = sr.buf, *dst = d.buf, *stage = nullptr;
  check(cudaMalloc(&stage, std::min<std::size_t>(hi, std::size_t{1} << 20)), "cudaMalloc (stage)");
  cudaStream_t s = sr.stream, pullStream = d.stream;
  bool canAccess = sr.peer;
  std::printf("# bare cudaMemcpyPeerAsync GPU %d -> GPU %d (peer access %s)\n", from, to, canAccess ? "on" : "off");
  std::printf("# %12s %14s %14s %14s %14s %14s %14s %14s %14s\n", "bytes", "latency(us)", "bw(GB/s)", "push+event",
              "pull+sync", "pull+event", "stage 2 sync", "stage chained", "latency mean");
  // Median of `it` timed runs of f (after 10 untimed ones), in microseconds; their mean in *mean.
  auto median = [](int it, auto&& f, double* mean = nullptr) {
    std::vector<double> t;
    double sum = 0;
    for (int k = 0; k < it + 10; ++k) {
      double t0 = cgdr::user::seconds();
      f();
      if (k >= 10) {
        t.push_back(cgdr::user::seconds() - t0);
        sum += t.back();
      }
    }
    if (mean) *mean = sum / double(t.size()) * 1e6;
    std::sort(t.begin(), t.end());
    return t[t.size() / 2] * 1e6;
  };
  std::string jl, jm, jb;
  for (std::size_t size = lo; size <= hi; size = size ? size * 2 : 1) {
    int it = size > (1u << 20) ? std::max(20, iters / 20) : iters;
    double latMean = 0;
    double lat = median(
        it,
        [&] {
          check(cudaMemcpyPeerAsync(dst, to, src, from, size, s), "cudaMemcpyPeerAsync");
          check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        },
        &latMean);
    int window = 64, reps = size > (16u << 20) ? 2 : size > (1u << 20) ? 5 : 20;
    check(cudaMemcpyPeerAsync(dst, to, src, from, size, s), "warm-up");
    check(cudaStreamSynchronize(s), "sync");
    double t0 = cgdr::user::seconds();
    for (int r = 0; r < reps; ++r)
      for (int w = 0; w < window; ++w) check(cudaMemcpyPeerAsync(dst, to, src, from, size, s), "cudaMemcpyPeerAsync");
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
    double bw = double(size) * window * reps / (cgdr::user::seconds() - t0) / 1e9;
    // Push (the source GPU's stream) or pull (the destination GPU's, with its device current),
    // completion seen by a stream synchronize or by polling an event.
    auto waitEvent = [&](cudaEvent_t e, cudaStream_t st) {
      check(cudaEventRecord(e, st), "cudaEventRecord");
      while (cudaEventQuery(e) == cudaErrorNotReady) {
      }
    };
    double pushEv = median(it, [&] {
      check(cudaMemcpyPeerAsync(dst, to, src, from, size, s), "cudaMemcpyPeerAsync");
      waitEvent(sr.event, s);
    });
    check(cudaSetDevice(to), "cudaSetDevice");
    double pullSync = median(it, [&] {
      check(cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, pullStream), "cudaMemcpyAsync (pull)");
      check(cudaStreamSynchronize(pullStream), "cudaStreamSynchronize");
    });
    double pull = median(it, [&] {
      check(cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, pullStream), "cudaMemcpyAsync (pull)");
      waitEvent(d.event, pullStream);
    });
    check(cudaSetDevice(from), "cudaSetDevice");
    // The staging variants only for sizes a staging block holds (the ring moves 1 block at a time).
    double two = 0, chained = 0;
    if (size <= (std::size_t{1} << 20)) {
      two = median(it, [&] {
        check(cudaMemcpyAsync(stage, src, size, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync (stage)");
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
        check(cudaMemcpyPeerAsync(dst, to, stage, from, size, s), "cudaMemcpyPeerAsync");
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      });
      chained = median(it, [&] {
        check(cudaMemcpyAsync(stage, src, size, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync (stage)");
        check(cudaMemcpyPeerAsync(dst, to, stage, from, size, s), "cudaMemcpyPeerAsync");
        check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
      });
    }
    std::printf("  %12zu %14.2f %14.2f %14.2f %14.2f %14.2f %14.2f %14.2f %14.2f\n", size, lat, bw, pushEv, pullSync, pull,
                two, chained, latMean);
    char e[96];
    std::snprintf(e, sizeof e, "%s\"%zu\": %.3f", jl.empty() ? "" : ", ", size, lat);
    jl += e;
    std::snprintf(e, sizeof e, "%s\"%zu\": %.3f", jm.empty() ? "" : ", ", size, latMean);
    jm += e;
    std::snprintf(e, sizeof e, "%s\"%zu\": %.6g", jb.empty() ? "" : ", ", size, bw);
    jb += e;
    if (size == 0) break;
  }
  if (!json.empty()) {
    FILE* f = std::fopen(json.c_str(), "w");
    if (f) {
      std::fprintf(f, "{\"latency\": {%s}, \"latency_mean\": {%s}, \"bw\": {%s}}\n", jl.c_str(), jm.c_str(),
                   jb.c_str());
      std::fclose(f);
    }
  }
  return 0;
}
