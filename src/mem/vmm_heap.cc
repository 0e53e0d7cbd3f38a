#include "mem/vmm_heap.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/log.hpp"
#include "mem/chunk_ranges.hpp"
#include "mem/vmm.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::mem {
namespace {

base::ChoiceSetting gMode(
    "CGDR_CUDA_MALLOC", "auto", {"auto", "exportable", "off"},
    "Where cudaMalloc memory comes from, for programs linked with the shared CUDA runtime (libcudart.so; a "
    "statically linked runtime cannot be interposed). auto: from cuMem memory exportable as a file "
    "descriptor once MPI_Init found a co-located rank in another PID namespace that could not otherwise "
    "map this rank's buffers (one copy instead of two through staging); exportable: always so, from the "
    "first call; off: the real cudaMalloc. Such memory has no legacy IPC handle (cudaIpcGetMemHandle fails "
    "on it).");
enum { kAuto, kExportable, kOff };

constexpr std::size_t kSmallMax = std::size_t{1} << 20;  // requests up to this share chunks
constexpr std::size_t kSmallChunk = std::size_t{2} << 20;

std::atomic<bool> gActive{false};  // auto: the engine asked for the heap

struct Heap {
  std::mutex mutex;
  ChunkRanges ranges;
  std::map<std::uint64_t, VmmBuffer> chunks;  // base -> memory
  std::map<int, std::vector<int>> peersOf;    // device -> visible devices that can access it
  std::size_t served = 0, fallbacks = 0;
  std::string why;
};

Heap& heap() {
  static Heap* h = new Heap;  // never destroyed: memory may be freed during exit
  return *h;
}

const std::vector<int>& peersOf(Heap& h, int device) {
  auto [it, fresh] = h.peersOf.try_emplace(device);
#if CGDR_HAVE_CUDA
  for (int d = 0; fresh && d < base::cuda::deviceCount(); ++d) {
    int can = 0;
    if (d != device && cudaDeviceCanAccessPeer(&can, d, device) == cudaSuccess && can) it->second.push_back(d);
  }
  (void)cudaGetLastError();
#endif
  return it->second;
}

// A new chunk for a request of n bytes on device, registered with the ranges; false if the
// driver refused.
bool grow(Heap& h, std::size_t n, int device) {
  auto buf = VmmBuffer::create(device, n <= kSmallMax ? kSmallChunk : n);
  if (!buf.isOk()) return false;
  for (int d : peersOf(h, device)) {
    // Like cudaMalloc memory after cudaDeviceEnablePeerAccess: usable from the peer GPUs.
    if (base::Status st = buf.value().allowAccess(d); !st.isOk())
      CGDR_LOG(kInfo, kCuda, "exportable heap: GPU %d cannot access GPU %d's chunk: %s", d, device,
               st.message().c_str());
  }
  auto base = reinterpret_cast<std::uint64_t>(buf.value().data());
  h.ranges.addChunk(base, buf.value().size(), device);
  h.chunks.emplace(base, std::move(buf.value()));
  return true;
}

}  // namespace

bool exportableMallocActive() {
  return gActive.load(std::memory_order_acquire) || gMode.get().index == kExportable;
}

void activateExportableMalloc(const char* why) {
  if (gMode.get().index != kAuto || gActive.load()) return;
  {
    Heap& h = heap();
    std::lock_guard lock(h.mutex);
    h.why = why;
  }
  gActive.store(true, std::memory_order_release);
  CGDR_LOG(kInfo, kCuda, "cudaMalloc now served by the exportable heap: %s", why);
}

std::string exportableMallocState() {
  int mode = gMode.get().index;
  std::string s = "CGDR_CUDA_MALLOC=" + gMode.get().name + ": ";
  if (mode == kOff) return s + "the real cudaMalloc";
  if (mode == kExportable) return s + "exportable heap from the first call";
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  return s + (gActive.load() ? "exportable heap since MPI_Init (" + h.why + ")"
                             : "the real cudaMalloc until MPI_Init finds a co-located peer that needs exportable "
                               "memory");
}

void* heapAllocate(std::size_t n, int device) {
  if (n == 0 || !base::cuda::usable()) return nullptr;
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  std::uint64_t at = h.ranges.take(n, device);
  if (!at && grow(h, n, device)) at = h.ranges.take(n, device);
  if (!at) {
    ++h.fallbacks;
    return nullptr;
  }
  ++h.served;
  return reinterpret_cast<void*>(at);
}

int heapDeviceOf(const void* p) {
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  return h.ranges.deviceOf(reinterpret_cast<std::uint64_t>(p));
}

bool heapRelease(const void* p) {
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  std::uint64_t empty = 0;
  if (!h.ranges.give(reinterpret_cast<std::uint64_t>(p), &empty)) return false;
  if (empty) {
    h.ranges.dropChunk(empty);
    h.chunks.erase(empty);  // unmaps and releases the memory
  }
  return true;
}

void heapMarkShared(const void* p) {
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  h.ranges.markShared(reinterpret_cast<std::uint64_t>(p));
}

HeapStats heapStats() {
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  ChunkRanges::Totals t = h.ranges.totals();
  return {h.served, h.fallbacks, t.chunks, t.chunkBytes, t.sharedChunks, t.live, t.liveBytes};
}

}  // namespace cgdr::mem
