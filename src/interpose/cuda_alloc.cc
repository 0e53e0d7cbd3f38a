// cudaMalloc/cudaFree of programs linked with the shared CUDA runtime (libcudart.so.11.0/.12/.13):
// served by the exportable heap while mem::exportableMallocActive() (CGDR_CUDA_MALLOC), so a peer
// in another PID namespace maps the user's buffer itself (one copy, not two through staging).
// cudaFree and cudaDeviceSynchronize, which wait for the whole GPU, first ask cgdr's resident copy
// kernels to leave (mem::residentLeave): they would otherwise stay for their idle time (20 us).
// cudaDeviceReset also waits for them to leave, then ends cgdr's use of GPU memory and drops what
// the kernels used (mem::noteGpuReset): the reset destroys the context whose streams, page-locked
// chunks and peer mappings cgdr holds.
// cudaMallocAsync/cudaFreeAsync (and their _ptsz forms, per-thread default stream) on the device's
// default pool likewise while mem::exportableAsyncActive() (CGDR_CUDA_MALLOC_ASYNC), in stream
// order: a range freed on a stream is handed out again at once to an allocation on that stream
// (its work runs after the free's), and to others once an event recorded at the free completed.
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
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "base/log.hpp"
#include "mem/chunk_ranges.hpp"
#include "mem/classify.hpp"
#include "mem/resident.hpp"
#include "mem/vmm_heap.hpp"

namespace {

// A range given back by cudaFreeAsync, waiting for its stream to pass the free.
struct Pending {
  void* p;
  std::size_t size;  // of the heap range
  int device;        // of the heap range
  cudaEvent_t event;
  int eventDevice;
  std::uintptr_t stream;  // the stream as this runtime names it (0 for the per-thread stream)
};

// The program's own runtime of one soname version, found after this library in load order.
struct Runtime {
  const char* version;
  std::once_flag once;
  cudaError_t (*malloc)(void**, size_t) = nullptr;
  cudaError_t (*free)(void*) = nullptr;
  cudaError_t (*getDevice)(int*) = nullptr;
  cudaError_t (*setDevice)(int) = nullptr;
  cudaError_t (*synchronize)() = nullptr;
  cudaError_t (*reset)() = nullptr;
  cudaError_t (*mallocAsync)(void**, size_t, cudaStream_t) = nullptr;
  cudaError_t (*mallocAsyncPtsz)(void**, size_t, cudaStream_t) = nullptr;
  cudaError_t (*freeAsync)(void*, cudaStream_t) = nullptr;
  cudaError_t (*freeAsyncPtsz)(void*, cudaStream_t) = nullptr;
  cudaError_t (*eventCreate)(cudaEvent_t*, unsigned) = nullptr;
  cudaError_t (*eventRecord)(cudaEvent_t, cudaStream_t) = nullptr;
  cudaError_t (*eventQuery)(cudaEvent_t) = nullptr;
  cudaError_t (*streamWaitEvent)(cudaStream_t, cudaEvent_t, unsigned) = nullptr;
  cudaError_t (*streamIsCapturing)(cudaStream_t, cudaStreamCaptureStatus*) = nullptr;
  cudaError_t (*streamSynchronize)(cudaStream_t) = nullptr;
  cudaError_t (*streamGetDevice)(cudaStream_t, int*) = nullptr;
  cudaError_t (*deviceGetMemPool)(cudaMemPool_t*, int) = nullptr;
  cudaError_t (*deviceGetDefaultMemPool)(cudaMemPool_t*, int) = nullptr;
  std::mutex mutex;
  std::bitset<256> started;  // devices whose primary context this runtime has set up
  std::deque<Pending> pending;                       // cudaFreeAsync ranges, oldest first
  std::map<int, std::vector<cudaEvent_t>> spare;     // completed events per device, for reuse
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
    find(r.reset, "cudaDeviceReset", r.version, &::cudaDeviceReset);
    find(r.mallocAsync, "cudaMallocAsync", r.version, &::cudaMallocAsync);
    find(r.mallocAsyncPtsz, "cudaMallocAsync_ptsz", r.version, r.mallocAsync);
    find(r.freeAsync, "cudaFreeAsync", r.version, &::cudaFreeAsync);
    find(r.freeAsyncPtsz, "cudaFreeAsync_ptsz", r.version, r.freeAsync);
    find(r.eventCreate, "cudaEventCreateWithFlags", r.version, &::cudaEventCreateWithFlags);
    find(r.eventRecord, "cudaEventRecord", r.version, &::cudaEventRecord);
    find(r.eventQuery, "cudaEventQuery", r.version, &::cudaEventQuery);
    find(r.streamWaitEvent, "cudaStreamWaitEvent", r.version, &::cudaStreamWaitEvent);
    find(r.streamIsCapturing, "cudaStreamIsCapturing", r.version, &::cudaStreamIsCapturing);
    find(r.streamSynchronize, "cudaStreamSynchronize", r.version, &::cudaStreamSynchronize);
    // Older runtimes lack it; cgdr's own answers for any stream (streams are the driver's handles).
    find(r.streamGetDevice, "cudaStreamGetDevice", r.version, &::cudaStreamGetDevice);
    find(r.deviceGetMemPool, "cudaDeviceGetMemPool", r.version, &::cudaDeviceGetMemPool);
    find(r.deviceGetDefaultMemPool, "cudaDeviceGetDefaultMemPool", r.version, &::cudaDeviceGetDefaultMemPool);
  });
  return r;
}

// What cudaMalloc would do first: the program's context on this GPU exists from here on. False
// if the runtime cannot set it up (it then answers the call itself). r.mutex held.
bool started(Runtime& r, int dev) {
  if (r.started[dev]) return true;
  if (r.free(nullptr) != cudaSuccess) return false;
  r.started[dev] = true;
  return true;
}

// Pending ranges whose stream passed their free go back to the heap (kept, as a pool keeps its
// memory): the oldest ones while they are done, or every done one (all). r.mutex held.
void reclaim(Runtime& r, bool all) {
  for (auto it = r.pending.begin(); it != r.pending.end();) {
    cudaError_t q = r.eventQuery(it->event);
    if (q == cudaErrorNotReady) {
      if (!all) break;
      ++it;
      continue;
    }
    (void)cudaGetLastError();
    // Done (or the event failed: the context is broken and nothing uses the range any more).
    cgdr::mem::heapRelease(it->p, true);
    r.spare[it->eventDevice].push_back(it->event);
    it = r.pending.erase(it);
  }
}

// A pending range freed on `stream` itself, of the rounded size n on its device, handed out again
// as it is: work on the stream after this point runs after the free. (The stream also waits for
// the free's event: a handle destroyed and made again names another stream.) r.mutex held.
void* reusePending(Runtime& r, std::uintptr_t stream, cudaStream_t s, std::size_t n, int device) {
  if (stream == 0) return nullptr;  // per-thread default streams: one handle, one stream per thread
  n = (n + cgdr::mem::ChunkRanges::kAlign - 1) / cgdr::mem::ChunkRanges::kAlign * cgdr::mem::ChunkRanges::kAlign;
  for (auto it = r.pending.begin(); it != r.pending.end(); ++it) {
    if (it->stream != stream || it->size != n || it->device != device) continue;
    if (r.streamWaitEvent(s, it->event, 0) != cudaSuccess) {
      (void)cudaGetLastError();
      return nullptr;
    }
    void* p = it->p;
    r.spare[it->eventDevice].push_back(it->event);
    r.pending.erase(it);
    cgdr::mem::heapCountReused();
    return p;
  }
  return nullptr;
}

bool pendingFree(const Runtime& r, const void* p) {
  for (const Pending& q : r.pending)
    if (q.p == p) return true;
  return false;
}

// A stream of a stream-ordered call as this runtime names it: the per-thread form (_ptsz) means
// the calling thread's default stream by 0. Its device: the current one for the default streams.
struct StreamOf {
  cudaStream_t stream;
  std::uintptr_t key;  // equal keys: one stream (0: a per-thread stream, never compared)
  int device = -1;
};

StreamOf streamOf(cudaStream_t s, bool ptsz) {
  StreamOf o{s, reinterpret_cast<std::uintptr_t>(s)};
  if (ptsz && !s) o.stream = cudaStreamPerThread;
  if (o.stream == cudaStreamPerThread) o.key = 0;
  else if (!s) o.key = reinterpret_cast<std::uintptr_t>(cudaStreamLegacy);  // 0: the legacy stream
  return o;
}

// Its device, once it is known not to be capturing (asking a capturing stream for its device
// invalidates the capture).
void findDevice(Runtime& r, StreamOf& o) {
  bool special = !o.stream || o.stream == cudaStreamLegacy || o.stream == cudaStreamPerThread;
  if (special ? r.getDevice(&o.device) != cudaSuccess : r.streamGetDevice(o.stream, &o.device) != cudaSuccess) {
    (void)cudaGetLastError();
    o.device = -1;
  }
}

// Only cudaStreamIsCapturing may be asked of a stream before this says it is not capturing.
bool capturing(Runtime& r, cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (r.streamIsCapturing(s, &st) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // unknown: leave the call to the runtime
  }
  return st != cudaStreamCaptureStatusNone;
}

// The program allocates from the device's default pool (it did not make another pool current).
bool defaultPool(Runtime& r, int dev) {
  cudaMemPool_t cur = nullptr, def = nullptr;
  bool yes = r.deviceGetMemPool(&cur, dev) == cudaSuccess && r.deviceGetDefaultMemPool(&def, dev) == cudaSuccess &&
             cur == def;
  if (!yes) (void)cudaGetLastError();
  return yes;
}

cudaError_t allocate(Runtime& r, void** p, size_t n) {
  int dev = 0;
  if (p && n && cgdr::mem::exportableMallocActive() && r.getDevice(&dev) == cudaSuccess && dev >= 0 && dev < 256) {
    {
      std::lock_guard lock(r.mutex);
      if (!started(r, dev)) return r.malloc(p, n);  // the runtime answers for itself
      if (!r.pending.empty()) reclaim(r, false);
    }
    if (void* q = cgdr::mem::heapAllocate(n, dev)) {
      *p = q;
      return cudaSuccess;
    }
  }
  return r.malloc(p, n);
}

cudaError_t allocateAsync(Runtime& r, void** p, size_t n, cudaStream_t s, bool ptsz) {
  auto real = [&] { return (ptsz ? r.mallocAsyncPtsz : r.mallocAsync)(p, n, s); };
  if (!p || !n || !cgdr::mem::exportableAsyncActive()) return real();
  StreamOf so = streamOf(s, ptsz);
  if (capturing(r, so.stream)) return real();
  findDevice(r, so);
  if (so.device < 0 || so.device >= 256 || !defaultPool(r, so.device)) return real();
  std::lock_guard lock(r.mutex);
  if (!started(r, so.device)) return real();
  void* q = nullptr;
  if (!r.pending.empty()) {
    q = reusePending(r, so.key, so.stream, n, so.device);
    reclaim(r, false);
  }
  if (!q) q = cgdr::mem::heapAllocate(n, so.device, true, r.pending.empty());
  if (!q && !r.pending.empty()) {
    reclaim(r, true);  // before a new chunk: whatever finished meanwhile
    q = cgdr::mem::heapAllocate(n, so.device, true);
  }
  if (!q) return real();
  *p = q;
  return cudaSuccess;
}

cudaError_t release(Runtime& r, void* p) {
  if (p) cgdr::mem::residentLeave();  // (cudaFree(nullptr) waits for nothing)
  std::size_t size = 0;
  int dev = p ? cgdr::mem::heapRangeOf(p, &size) : -1;
  if (dev < 0) return r.free(p);
  {
    std::lock_guard lock(r.mutex);
    if (pendingFree(r, p)) return cudaErrorInvalidValue;  // freed already (cudaFreeAsync)
  }
  // cudaFree waits for the GPU: work still using the range must end before it is handed out again.
  int cur = dev;
  r.getDevice(&cur);
  if (cur != dev) r.setDevice(dev);
  cudaError_t e = r.synchronize();
  if (cur != dev) r.setDevice(cur);
  cgdr::mem::heapRelease(p);
  return e;  // like cudaFree, an earlier asynchronous error is reported here
}

cudaError_t releaseAsync(Runtime& r, void* p, cudaStream_t s, bool ptsz) {
  std::size_t size = 0;
  int dev = p ? cgdr::mem::heapRangeOf(p, &size) : -1;
  if (dev < 0) return (ptsz ? r.freeAsyncPtsz : r.freeAsync)(p, s);
  StreamOf so = streamOf(s, ptsz);
  std::lock_guard lock(r.mutex);
  if (pendingFree(r, p)) return cudaErrorInvalidValue;  // freed already
  if (capturing(r, so.stream)) {
    // The free belongs to a graph that may run any number of times later: the range cannot be
    // ordered after it, so it stays the program's until MPI_Finalize.
    cgdr::mem::heapCountDeferred(true);
    return cudaSuccess;
  }
  findDevice(r, so);
  int cur = -1;
  cudaEvent_t ev = nullptr;
  if (so.device >= 0 && r.getDevice(&cur) == cudaSuccess) {
    auto& spare = r.spare[so.device];
    if (!spare.empty()) {
      ev = spare.back();
      spare.pop_back();
    } else {
      if (cur != so.device) r.setDevice(so.device);
      if (r.eventCreate(&ev, cudaEventDisableTiming) != cudaSuccess) ev = nullptr;
      if (cur != so.device) r.setDevice(cur);
    }
  }
  if (ev && r.eventRecord(ev, so.stream) == cudaSuccess) {
    r.pending.push_back({p, size, dev, ev, so.device, so.key});
    cgdr::mem::heapCountDeferred(false);
    return cudaSuccess;
  }
  (void)cudaGetLastError();
  if (ev) r.spare[so.device].push_back(ev);
  // No event on that stream: wait for it here instead (the range is free once it passed).
  cudaError_t e = r.streamSynchronize(so.stream);
  cgdr::mem::heapRelease(p, true);
  return e;
}

cudaError_t synchronize(Runtime& r) {
  cgdr::mem::residentLeave();
  return r.synchronize();
}

cudaError_t reset(Runtime& r) {
  cgdr::mem::residentLeave();
  (void)r.synchronize();  // the kernel gone before its context (an error here is the reset's to report)
  if (cgdr::mem::noteGpuReset())  // (also forgets the resident kernels' mailboxes)
    CGDR_LOG(kInfo, kMem, "cudaDeviceReset: cgdr moves no GPU buffer from here on (its GPU state goes with the reset)");
  return r.reset();
}

}  // namespace

#define CGDR_EXPORT extern "C" __attribute__((visibility("default")))
CGDR_EXPORT cudaError_t cgdr_cudaMalloc_v11(void** p, size_t n) { return allocate(runtime(0), p, n); }
CGDR_EXPORT cudaError_t cgdr_cudaMalloc_v12(void** p, size_t n) { return allocate(runtime(1), p, n); }
CGDR_EXPORT cudaError_t cgdr_cudaMalloc_v13(void** p, size_t n) { return allocate(runtime(2), p, n); }
CGDR_EXPORT cudaError_t cgdr_cudaFree_v11(void* p) { return release(runtime(0), p); }
CGDR_EXPORT cudaError_t cgdr_cudaFree_v12(void* p) { return release(runtime(1), p); }
CGDR_EXPORT cudaError_t cgdr_cudaFree_v13(void* p) { return release(runtime(2), p); }
CGDR_EXPORT cudaError_t cgdr_cudaDeviceSynchronize_v11() { return synchronize(runtime(0)); }
CGDR_EXPORT cudaError_t cgdr_cudaDeviceSynchronize_v12() { return synchronize(runtime(1)); }
CGDR_EXPORT cudaError_t cgdr_cudaDeviceSynchronize_v13() { return synchronize(runtime(2)); }
CGDR_EXPORT cudaError_t cgdr_cudaDeviceReset_v11() { return reset(runtime(0)); }
CGDR_EXPORT cudaError_t cgdr_cudaDeviceReset_v12() { return reset(runtime(1)); }
CGDR_EXPORT cudaError_t cgdr_cudaDeviceReset_v13() { return reset(runtime(2)); }
#define CGDR_ASYNC(v, i)                                                                                   \
  CGDR_EXPORT cudaError_t cgdr_cudaMallocAsync_##v(void** p, size_t n, cudaStream_t s) {                  \
    return allocateAsync(runtime(i), p, n, s, false);                                                      \
  }                                                                                                        \
  CGDR_EXPORT cudaError_t cgdr_cudaMallocAsyncPtsz_##v(void** p, size_t n, cudaStream_t s) {              \
    return allocateAsync(runtime(i), p, n, s, true);                                                       \
  }                                                                                                        \
  CGDR_EXPORT cudaError_t cgdr_cudaFreeAsync_##v(void* p, cudaStream_t s) {                               \
    return releaseAsync(runtime(i), p, s, false);                                                          \
  }                                                                                                        \
  CGDR_EXPORT cudaError_t cgdr_cudaFreeAsyncPtsz_##v(void* p, cudaStream_t s) {                           \
    return releaseAsync(runtime(i), p, s, true);                                                           \
  }
CGDR_ASYNC(v11, 0)
CGDR_ASYNC(v12, 1)
CGDR_ASYNC(v13, 2)
__asm__(".symver cgdr_cudaMalloc_v11, cudaMalloc@libcudart.so.11.0");
__asm__(".symver cgdr_cudaMalloc_v12, cudaMalloc@libcudart.so.12");
__asm__(".symver cgdr_cudaMalloc_v13, cudaMalloc@libcudart.so.13");
__asm__(".symver cgdr_cudaFree_v11, cudaFree@libcudart.so.11.0");
__asm__(".symver cgdr_cudaDeviceSynchronize_v11, cudaDeviceSynchronize@libcudart.so.11.0");
__asm__(".symver cgdr_cudaDeviceReset_v11, cudaDeviceReset@libcudart.so.11.0");
__asm__(".symver cgdr_cudaMallocAsync_v11, cudaMallocAsync@libcudart.so.11.0");
__asm__(".symver cgdr_cudaMallocAsyncPtsz_v11, cudaMallocAsync_ptsz@libcudart.so.11.0");
__asm__(".symver cgdr_cudaFreeAsync_v11, cudaFreeAsync@libcudart.so.11.0");
__asm__(".symver cgdr_cudaFreeAsyncPtsz_v11, cudaFreeAsync_ptsz@libcudart.so.11.0");
__asm__(".symver cgdr_cudaFree_v12, cudaFree@libcudart.so.12");
__asm__(".symver cgdr_cudaDeviceSynchronize_v12, cudaDeviceSynchronize@libcudart.so.12");
__asm__(".symver cgdr_cudaDeviceReset_v12, cudaDeviceReset@libcudart.so.12");
__asm__(".symver cgdr_cudaMallocAsync_v12, cudaMallocAsync@libcudart.so.12");
__asm__(".symver cgdr_cudaMallocAsyncPtsz_v12, cudaMallocAsync_ptsz@libcudart.so.12");
__asm__(".symver cgdr_cudaFreeAsync_v12, cudaFreeAsync@libcudart.so.12");
__asm__(".symver cgdr_cudaFreeAsyncPtsz_v12, cudaFreeAsync_ptsz@libcudart.so.12");
__asm__(".symver cgdr_cudaFree_v13, cudaFree@libcudart.so.13");
__asm__(".symver cgdr_cudaDeviceSynchronize_v13, cudaDeviceSynchronize@libcudart.so.13");
__asm__(".symver cgdr_cudaDeviceReset_v13, cudaDeviceReset@libcudart.so.13");
__asm__(".symver cgdr_cudaMallocAsync_v13, cudaMallocAsync@libcudart.so.13");
__asm__(".symver cgdr_cudaMallocAsyncPtsz_v13, cudaMallocAsync_ptsz@libcudart.so.13");
__asm__(".symver cgdr_cudaFreeAsync_v13, cudaFreeAsync@libcudart.so.13");
__asm__(".symver cgdr_cudaFreeAsyncPtsz_v13, cudaFreeAsync_ptsz@libcudart.so.13");
#endif
