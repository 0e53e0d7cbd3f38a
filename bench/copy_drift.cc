// Is a copy's speed a property of the process, of the allocation or of the moment? Six buffer
// pairs in one process on one GPU (cudaMalloc, kept alive together), each timed as windows of 64
// device-to-device copies, then the first pair again. No MPI, no cgdr (bench/run-variance.sh).
//   cgdr-copy-drift [-d DEVICE]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "user_side.hpp"

namespace {

void check(cudaError_t e, const char* what) { cgdr::user::cudaOrExit(e, "cgdr-copy-drift", what); }

}  // namespace

int main(int argc, char** argv) {
  int dev = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-d") == 0 && i + 1 < argc) dev = std::atoi(argv[++i]);
    else { std::fprintf(stderr, "usage: cgdr-copy-drift [-d DEVICE]\n"); return 2; }
  }
  constexpr int kPairs = 6, kWindow = 64, kReps = 40;
  constexpr std::size_t kBytes = std::size_t{4} << 20;
  const std::size_t sizes[] = {65536, 2097152};
  check(cudaSetDevice(dev), "cudaSetDevice");
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  void* src[kPairs];
  void* dst[kPairs];
  for (int p = 0; p < kPairs; ++p) {
    check(cudaMalloc(&src[p], kBytes), "cudaMalloc");
    check(cudaMalloc(&dst[p], kBytes), "cudaMalloc");
    check(cudaMemset(src[p], p + 1, kBytes), "cudaMemset");
  }
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const int order[] = {0, 1, 2, 3, 4, 5, 0};
  for (int p : order) {
    std::printf("pair %d:", p);
    for (std::size_t z : sizes) {
      for (int w = 0; w < 5; ++w) check(cudaMemcpyAsync(dst[p], src[p], z, cudaMemcpyDeviceToDevice, st), "warm-up copy");
      check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
      const double t0 = cgdr::user::seconds();
      for (int r = 0; r < kReps; ++r) {
        for (int w = 0; w < kWindow; ++w) check(cudaMemcpyAsync(dst[p], src[p], z, cudaMemcpyDeviceToDevice, st), "copy");
        check(cudaStreamSynchronize(st), "cudaStreamSynchronize");
      }
      std::printf(" %zu B %.1f GB/s", z, double(z) * kWindow * kReps / (cgdr::user::seconds() - t0) / 1e9);
    }
    std::printf("\n");
  }
  for (int p = 0; p < kPairs; ++p) {
    check(cudaFree(src[p]), "cudaFree");
    check(cudaFree(dst[p]), "cudaFree");
  }
  return 0;
}
