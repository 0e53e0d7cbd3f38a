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
// A cuMem allocation exportable as a POSIX file descriptor (what the cuda-vmm channels share
// across containers without a copy), mapped read/write on the current device.
struct VmmAlloc {
  void* ptr = nullptr;
  std::size_t size = 0;  // rounded up to the allocation granularity
  unsigned long long handle = 0;
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
  auto release = driverEntry<decltype(&cuMemRelease)>("cuMemRelease");
  auto afree = driverEntry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  auto d = reinterpret_cast<CUdeviceptr>(a.ptr);
  if (a.ptr && unmap) unmap(d, a.size);
  if (a.handle && release) release(a.handle);
  if (a.ptr && afree) afree(d, a.size);
}

// Creates, reserves, maps and grants access; on failure nothing stays allocated and it returns
// false with `what` naming the call that failed.
inline bool vmmAlloc(std::size_t bytes, VmmAlloc* out, const char** what) {
  *out = VmmAlloc{};
  auto gran = driverEntry<decltype(&cuMemGetAllocationGranularity)>("cuMemGetAllocationGranularity");
  auto create = driverEntry<decltype(&cuMemCreate)>("cuMemCreate");
  auto reserve = driverEntry<decltype(&cuMemAddressReserve)>("cuMemAddressReserve");
  auto map = driverEntry<decltype(&cuMemMap)>("cuMemMap");
  auto access = driverEntry<decltype(&cuMemSetAccess)>("cuMemSetAccess");
  auto afree = driverEntry<decltype(&cuMemAddressFree)>("cuMemAddressFree");
  auto release = driverEntry<decltype(&cuMemRelease)>("cuMemRelease");
  *what = "driver entry points";
  if (!gran || !create || !reserve || !map || !access || !afree || !release) return false;
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
  std::size_t size = (bytes + g - 1) / g * g;
  CUmemGenericAllocationHandle h = 0;
  *what = "cuMemCreate";
  if (create(&h, size, &prop, 0) != CUDA_SUCCESS) return false;
  CUdeviceptr p = 0;
  *what = "cuMemAddressReserve";
  if (reserve(&p, size, 0, 0, 0) != CUDA_SUCCESS) {
    release(h);
    return false;
  }
  *what = "cuMemMap";
  if (map(p, size, 0, h, 0) != CUDA_SUCCESS) {
    afree(p, size);
    release(h);
    return false;
  }
  out->ptr = reinterpret_cast<void*>(p);
  out->size = size;
  out->handle = h;
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
