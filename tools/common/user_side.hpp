// Pieces shared by cgdr's own user-side programs (tests, cgdr-bench, the bench/ probes): what an
// application would write itself, kept outside libcgdr. Header-only.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if CGDR_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace cgdr::user {

// "4096", "64K", "1.5M", "1G" (binary units) as bytes.
inline std::size_t parseSize(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  else if (*end == 'M' || *end == 'm') v *= 1024.0 * 1024;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return static_cast<std::size_t>(v);
}

// The p-quantile (0 to 1) of `v`, nearest rank; 0 where it is empty.
inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

// Seconds on the monotonic clock (for timing loops).
inline double seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Whether this process sees at least one usable GPU (false in a build without CUDA, or where the
// driver is absent or sees no device); a failed query leaves no sticky error behind.
inline bool gpuPresent() {
#if CGDR_HAVE_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return n > 0;
#else
  return false;
#endif
}

#if CGDR_HAVE_CUDA
// In a program without MPI: a failed CUDA call ends it, naming the program and the step.
inline void cudaOrExit(cudaError_t e, const char* program, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s: %s\n", program, what, cudaGetErrorString(e));
  std::exit(1);
}

// cuMem memory exportable as a POSIX file descriptor (what the cuda-vmm channels share across
// containers without a copy), mapped read/write on the current device: one allocation, or several
// mapped back to back into one reserved range (as PyTorch's expandable segments grow), or a range
// with pieces left unmapped (a segment not yet grown, or shrunk). The handles are released once
// mapped: the memory lives until it is unmapped.
struct VmmAlloc {
  void* ptr = nullptr;
  std::size_t size = 0;   // the reserved range: pieces * piece
  std::size_t piece = 0;  // rounded up to the allocation granularity
  int pieces = 0;
  unsigned unmapped = 0;  // bit i set: piece i is reserved but not mapped
};

// The driver's entry point (reached through the runtime: no -lcuda), nullptr when absent.
template <typename F>
F driverEntry(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    return nullptr;
  return reinterpret_cast<F>(fn);
}

// Frees what vmmAlloc made, after the device's pending work (as cudaFree would).
inline void vmmFree(const VmmAlloc& a) {
  cudaDeviceSynchronize();
  auto unmap = driverEntry<decltype(&cuMemUnmap)>("cuMemUnmap");
  auto afree = driverEntry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  auto d = reinterpret_cast<CUdeviceptr>(a.ptr);
  if (!a.ptr || !unmap || !afree) return;
  if (a.unmapped == 0) {
    unmap(d, a.size);  // mapped throughout (all that {ptr, size} says)
  } else {
    for (int i = 0; i < a.pieces; ++i)
      if (!(a.unmapped >> i & 1)) unmap(d + i * a.piece, a.piece);
  }
  afree(d, a.size);
}

// Creates `pieces` allocations of bytes / pieces each (rounded up to the granularity), reserves
// one range for them, maps them back to back (leaving the pieces whose bit is set in `unmapped`
// reserved but unmapped) and grants access; on failure nothing stays allocated and it returns
// false with `what` naming the call that failed.
inline bool vmmAlloc(std::size_t bytes, VmmAlloc* out, const char** what, int pieces = 1, unsigned unmapped = 0) {
  *out = VmmAlloc{};
  auto gran = driverEntry<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  auto create = driverEntry<decltype(&cuMemCreate)>("cuMemCreate");
  auto reserve = driverEntry<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  auto map = driverEntry<decltype(&cuMemMap)>("cuMemMap");
  auto access = driverEntry<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  auto afree = driverEntry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  auto release = driverEntry<decltype(&cuMemRelease)>("cuMemRelease");
  auto unmap = driverEntry<decltype(&cuMemUnmap)>("cuMemUnmap");
  *what = "driver entry points";
  if (!gran || !create || !reserve || !map || !access || !afree || !release || !unmap || pieces < 1 || pieces > 32)
    return false;
  int dev = 0;
  *what = "cudaGetDevice";
  if (cudaGetDevice(&dev) != cudaSuccess || cudaFree(nullptr) != cudaSuccess) return false;  // context exists
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  std::size_t g = 0;
  *what = "cuMemGetAllocationGranularity";
  if (gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || g == 0) return false;
  std::size_t each = (bytes + pieces - 1) / pieces;
  std::size_t piece = each ? (each + g - 1) / g * g : g;
  std::size_t size = piece * pieces;
  CUdeviceptr p = 0;
  *what = "cuMemAddressReserve";
  if (reserve(&p, size, 0, 0, 0) != CUDA_SUCCESS) return false;
  VmmAlloc v{reinterpret_cast<void*>(p), size, piece, 0, ~0u};  // nothing mapped yet
  CUmemAccessDesc a{};
  a.location = prop.location;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  for (int i = 0; i < pieces; ++i) {
    ++v.pieces;
    if (unmapped >> i & 1) continue;
    CUmemGenericAllocationHandle h = 0;
    *what = "cuMemCreate";
    bool ok = create(&h, piece, &prop, 0) == CUDA_SUCCESS;
    if (ok) {
      *what = "cuMemMap";
      ok = map(p + i * piece, piece, 0, h, 0) == CUDA_SUCCESS;
      release(h);  // a mapped allocation lives until unmapped
      if (ok) v.unmapped &= ~(1u << i);
    }
    *what = "cuMemSetAccess";  // (per piece: the range may have holes)
    if (!ok || access(p + i * piece, piece, &a, 1) != CUDA_SUCCESS) {
      vmmFree(v);
      return false;
    }
  }
  v.unmapped = unmapped & ((pieces == 32 ? 0u : 1u << pieces) - 1);
  *out = v;
  return true;
}
#endif

}  // namespace cgdr::user
