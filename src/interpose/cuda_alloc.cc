// cudaMalloc/cudaFree of programs linked with the shared CUDA runtime (libcudart.so.11.0/.12/.13):
// served by the exportable heap while mem::exportableMallocActive() (CGDR_CUDA_MALLOC), so a peer
// in another PID namespace maps the user's buffer itself (one copy, not two through staging).
//
// cgdr carries its own static CUDA runtime, which defines these names too: the entry points below
// have other names and are exported as cudaMalloc@libcudart.so.N (non-default versions, see
// cuda_alloc.map). The dynamic linker binds a program's versioned reference to the first library
// in load order whose name and version match: this one where libcgdr.so is preloaded (or linked
// before libcudart.so). A statically linked runtime cannot be interposed (its calls never leave
// the program); cgdr then works as before, through staging.
#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <atomic>
#include <bitset>
#include <mutex>

#include "mem/vmm_heap.hpp"

namespace {

// The program's own runtime of one soname version, found after this library in load order.
struct Runtime {
  const char* version;
  std::once_flag once;
  cudaError_t (*malloc)(void**, size_t) = nullptr;
  cudaError_t (*free)(void*) = nullptr;
  cudaError_t (*getDevice)(int*) = nullptr;
  cudaError_t (*setDevice)(int) = nullptr;
  cudaError_t (*synchronize)() = nullptr;
  std::mutex mutex;
  std::bitset<256> started;  // devices whose primary context this runtime has set up
};

Runtime gRuntimes[] = {{"libcudart.so.11.0"}, {"libcudart.so.12"}, {"libcudart.so.13"}};

template <class F>
void find(F& f, const char* name, const char* version, F fallback) {
  f = reinterpret_cast<F>(dlvsym(RTLD_NEXT, name, version));
  if (!f) f = fallback;  // cgdr's own runtime: never this file's entry points (no recursion)
}

Runtime& runtime(int v) {
  Runtime& r = gRuntimes[v];
  std::call_once(r.once, [&r] {
    find(r.malloc, "cudaMalloc", r.version, &::cudaMalloc);
    find(r.free, "cudaFree", r.version, &::cudaFree);
    find(r.getDevice, "cudaGetDevice", r.version, &::cudaGetDevice);
    find(r.setDevice, "cudaSetDevice", r.version, &::cudaSetDevice);
    find(r.synchronize, "cudaDeviceSynchronize", r.version, &::cudaDeviceSynchronize);
  });
  return r;
}

cudaError_t allocate(Runtime& r, void** p, size_t n) {
  int dev = 0;
  if (p && n && cgdr::mem::exportableMallocActive() && r.getDevice(&dev) == cudaSuccess && dev >= 0 && dev < 256) {
    {
      // What cudaMalloc would do first: the program's context on this GPU exists from here on.
      std::lock_guard lock(r.mutex);
      if (!r.started[dev]) {
        if (r.free(nullptr) != cudaSuccess) return r.malloc(p, n);  // the runtime answers for itself
        r.started[dev] = true;
      }
    }
    if (void* q = cgdr::mem::heapAllocate(n, dev)) {
      *p = q;
      return cudaSuccess;
    }
  }
  return r.malloc(p, n);
}

cudaError_t release(Runtime& r, void* p) {
  int dev = p ? cgdr::mem::heapDeviceOf(p) : -1;
  if (dev < 0) return r.free(p);
  // cudaFree waits for the GPU: work still using the range must end before it is handed out again.
  int cur = dev;
  r.getDevice(&cur);
  if (cur != dev) r.setDevice(dev);
  cudaError_t e = r.synchronize();
  if (cur != dev) r.setDevice(cur);
  cgdr::mem::heapRelease(p);
  return e;  // like cudaFree, an earlier asynchronous error is reported here
}

}  // namespace

#define CGDR_EXPORT extern "C" __attribute__((visibility("default")))
CGDR_EXPORT cudaError_t cgdr_cudaMalloc_v11(void** p, size_t n) { return allocate(runtime(0), p, n); }
CGDR_EXPORT cudaError_t cgdr_cudaMalloc_v12(void** p, size_t n) { return allocate(runtime(1), p, n); }
CGDR_EXPORT cudaError_t cgdr_cudaMalloc_v13(void** p, size_t n) { return allocate(runtime(2), p, n); }
CGDR_EXPORT cudaError_t cgdr_cudaFree_v11(void* p) { return release(runtime(0), p); }
CGDR_EXPORT cudaError_t cgdr_cudaFree_v12(void* p) { return release(runtime(1), p); }
CGDR_EXPORT cudaError_t cgdr_cudaFree_v13(void* p) { return release(runtime(2), p); }
__asm__(".symver cgdr_cudaMalloc_v11, cudaMalloc@libcudart.so.11.0");
__asm__(".symver cgdr_cudaMalloc_v12, cudaMalloc@libcudart.so.12");
__asm__(".symver cgdr_cudaMalloc_v13, cudaMalloc@libcudart.so.13");
__asm__(".symver cgdr_cudaFree_v11, cudaFree@libcudart.so.11.0");
__asm__(".symver cgdr_cudaFree_v12, cudaFree@libcudart.so.12");
__asm__(".symver cgdr_cudaFree_v13, cudaFree@libcudart.so.13");
#endif
