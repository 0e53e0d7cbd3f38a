// A stand-in for another job's process on a GPU (no MPI): it runs copy kernels one after another,
// each waited for, for a given time, and says how long each took from launch to completion. Run
// beside a cgdr process on the same GPU without MPS, the two contexts take turns (time slices):
// its turnaround then shows what the cgdr process's GPU work costs the other job
// (bench/gpu-suite.sh step `neighbour`, tests/gpu `gpu.resident_neighbour`).
//   cgdr-gpu-neighbour [-d DEVICE] [-s SECONDS] [-b BYTES]
// Prints "ready" once its first kernel ran (its context exists), then at the end one line:
//   kernels N in S s: turnaround p50 X us, p99 Y us, max Z us
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/config.hpp"
#include "mem/gpu_batch.hpp"
#include "user_side.hpp"

using namespace cgdr;
using Clock = std::chrono::steady_clock;

namespace {

void ok(cudaError_t e, const char* what) { user::cudaOrExit(e, "cgdr-gpu-neighbour", what); }

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  double seconds = 2;
  std::size_t bytes = 8 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "-d")) {
      device = std::atoi(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "-s")) {
      seconds = std::atof(argv[i + 1]);
    } else if (!std::strcmp(argv[i], "-b")) {
      auto b = base::parseBytes(argv[i + 1]);
      if (!b || *b == 0) {
        std::fprintf(stderr, "cgdr-gpu-neighbour: -b BYTES (> 0)\n");
        return 2;
      }
      bytes = *b;
    } else {
      std::fprintf(stderr, "usage: cgdr-gpu-neighbour [-d DEVICE] [-s SECONDS] [-b BYTES]\n");
      return 2;
    }
  }
  if (argc % 2 == 0 || seconds <= 0) {
    std::fprintf(stderr, "usage: cgdr-gpu-neighbour [-d DEVICE] [-s SECONDS (> 0)] [-b BYTES]\n");
    return 2;
  }
  char *src = nullptr, *dst = nullptr;
  cudaStream_t stream = nullptr;
  ok(cudaSetDevice(device), "cudaSetDevice");
  ok(cudaMalloc(&src, bytes), "cudaMalloc");
  ok(cudaMalloc(&dst, bytes), "cudaMalloc");
  ok(cudaMemset(src, 0x3c, bytes), "cudaMemset");
  ok(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  mem::GatherArgs a{};
  a.count = 1;
  a.item[0] = mem::GatherItem{reinterpret_cast<std::uint64_t>(src), reinterpret_cast<std::uint64_t>(dst), bytes};
  auto one = [&]() {
    ok(static_cast<cudaError_t>(mem::launchGather(a, stream)), "copy kernel launch");
    ok(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  };
  one();
  std::printf("ready\n");
  std::fflush(stdout);
  std::vector<double> us;
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  while (Clock::now() < end) {
    const auto t = Clock::now();
    one();
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t).count());
  }
  // The last kernel is checked once: a copy kernel that ran copied the whole buffer.
  std::vector<char> back(bytes);
  ok(cudaMemcpy(back.data(), dst, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
  for (std::size_t i = 0; i < bytes; ++i)
    if (back[i] != 0x3c) {
      std::fprintf(stderr, "cgdr-gpu-neighbour: byte %zu of the copy is %d, not %d\n", i, back[i], 0x3c);
      return 1;
    }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("kernels %zu in %.2f s: turnaround p50 %.1f us, p99 %.1f us, max %.1f us\n", us.size(), s,
              user::percentile(us, 0.5), user::percentile(us, 0.99), user::percentile(us, 1));
  return 0;
}
