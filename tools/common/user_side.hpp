// Pieces shared by cgdr's own user-side programs (tests, cgdr-bench, the bench/ probes): what an
// application would write itself, kept outside libcgdr. Header-only.
#pragma once
#include <cstddef>
#include <cstdlib>

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

#if CGDR_HAVE_CUDA
// cuMem memory exportable as a POSIX file descriptor (what the cuda-vmm channels share across
// containers without a copy), mapped read/write on the current device: one allocation, or several
// mapped back to back into one reserved range (as PyTorch's expandable segments grow). The handles
// are released once mapped: the memory lives until it is unmapped.
struct VmmAlloc {
  void* ptr = nullptr;
  std::size_t size = 0;  // rounded up to the allocation granularity (per piece)
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
  if (a.ptr && unmap) unmap(d, a.size);
  if (a.ptr && afree) afree(d, a.size);
}

// Creates `pieces` allocations of bytes / pieces each (rounded up to the granularity), reserves
// one range for them, maps them back to back and grants access; on failure nothing stays allocated
// and it returns false with `what` naming the call that failed.
inline bool vmmAlloc(std::size_t bytes, VmmAlloc* out, const char** what, int pieces = 1) {
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
  if (!gran || !create || !reserve || !map || !access || !afree || !release || !unmap || pieces < 1) return false;
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
  for (int i = 0; i < pieces; ++i) {
    CUmemGenericAllocationHandle h = 0;
    *what = "cuMemCreate";
    bool ok = create(&h, piece, &prop, 0) == CUDA_SUCCESS;
    if (ok) {
      *what = "cuMemMap";
      ok = map(p + i * piece, piece, 0, h, 0) == CUDA_SUCCESS;
      release(h);  // a mapped allocation lives until unmapped
    }
    if (!ok) {
      if (i) unmap(p, i * piece);
      afree(p, size);
      return false;
    }
  }
  out->ptr = reinterpret_cast<void*>(p);
  out->size = size;
  CUmemAccessDesc a{};
  a.location = prop.location;
  a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  *what = "cuMemSetAccess";
  if (access(p, size, &a, 1) != CUDA_SUCCESS) {
    vmmFree(*out);
    *out = VmmAlloc{};
    return false;
  }
  return true;
}
#endif

}  // namespace cgdr::user
