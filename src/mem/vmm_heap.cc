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
#include "mem/classify.hpp"
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
base::ChoiceSetting gAsyncMode(
    "CGDR_CUDA_MALLOC_ASYNC", "auto", {"auto", "exportable", "off"},
    "Where cudaMallocAsync memory comes from (the device's default pool; for programs linked with the shared "
    "CUDA runtime): pool memory has neither a legacy IPC handle nor a file descriptor, so no other process can "
    "map it and every message to or from it takes two copies through staging. auto: from cgdr's exportable "
    "heap once MPI_Init found a co-located rank that maps GPU memory through cuMem file descriptors; "
    "exportable: always so; off: the runtime's pool. Stream order is kept: a range freed by cudaFreeAsync is "
    "handed out again at once to the same stream, to others once the stream passed the free. Not served "
    "from the heap: calls during a stream capture, and devices whose current pool the program replaced "
    "(cudaDeviceSetMemPool).");
base::Setting<base::Bytes> gAsyncKeep(
    "CGDR_CUDA_MALLOC_ASYNC_KEEP", "1G", "bytes",
    "Chunks of the exportable heap emptied by cudaFreeAsync stay mapped for later allocations, up to this many "
    "bytes in all (as a pool keeps its memory); beyond it the chunks idle longest go back to the driver. Idle "
    "chunks are also given back when the driver refuses a new chunk.");
enum { kAuto, kExportable, kOff };

constexpr std::size_t kSmallMax = std::size_t{1} << 20;  // requests up to this share chunks
constexpr std::size_t kSmallChunk = std::size_t{2} << 20;


struct Heap {
  std::mutex mutex;
  ChunkRanges ranges;
  struct Chunk {
    VmmBuffer memory;
    base::cuda::PointerAttrs driver;  // what the driver said of it when it was made
  };
  std::map<std::uint64_t, Chunk> chunks;  // base -> chunk
  std::map<int, std::vector<int>> peersOf;    // device -> visible devices that can access it
  std::size_t served = 0, asyncServed = 0, fallbacks = 0, deferred = 0, reused = 0, captured = 0, trimmed = 0;
};

// Counts the changes of the heap's chunks and live ranges (made or dropped, handed out or given
// back; 0: no chunk ever), so a thread can keep the last answer it got while nothing changed. Only
// changed under the heap's lock.
std::atomic<std::uint64_t> gRangesVersion{0};

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
  // cuMem memory takes no SYNC_MEMOPS mark: the program's context is flagged before any copy
  // into the chunk can be pending (see mem::classify; once flagged, two driver calls).
  (void)base::cuda::setContextSyncMemops(device, false);  // (warns once if not)
  for (int d : peersOf(h, device)) {
    // Like cudaMalloc memory after cudaDeviceEnablePeerAccess: usable from the peer GPUs.
    if (base::Status st = buf.value().allowAccess(d); !st.isOk())
      CGDR_LOG(kInfo, kCuda, "exportable heap: GPU %d cannot access GPU %d's chunk: %s", d, device,
               st.message().c_str());
  }
  auto base = reinterpret_cast<std::uint64_t>(buf.value().data());
  // What the driver says of the chunk, once: classify answers heap buffers from it instead of
  // asking the driver per message (~0.2 us each on the sender's and the receiver's side).
  base::cuda::PointerAttrs a;
  if (!base::cuda::queryPointer(buf.value().data(), true, &a) || a.type != base::cuda::PointerAttrs::Type::kDevice ||
      a.bufferId == 0)
    a = base::cuda::PointerAttrs{};  // (kUnknown: classify asks the driver)
  h.ranges.addChunk(base, buf.value().size(), device);
  gRangesVersion.fetch_add(1, std::memory_order_release);
  h.chunks.emplace(base, Heap::Chunk{std::move(buf.value()), a});
  return true;
}

// Gives a chunk with no live range back to the driver (unmaps and releases its memory).
void drop(Heap& h, std::uint64_t base) {
  h.ranges.dropChunk(base);
  gRangesVersion.fetch_add(1, std::memory_order_release);
  h.chunks.erase(base);
}

}  // namespace

namespace {

// One entry point family's switch (cudaMalloc or cudaMallocAsync): its setting, and under auto
// whether the engine turned it on and why.
struct Switch {
  const base::ChoiceSetting& mode;
  const char* calls;     // "cudaMalloc"
  const char* runtime;   // what serves the calls without the heap
  const char* awaiting;  // auto, before MPI_Init found a reason
  std::atomic<bool> active{false};
  std::string why;       // Heap::mutex
};

Switch gMallocSwitch{gMode, "cudaMalloc", "the real cudaMalloc",
                     "until MPI_Init finds a co-located peer that needs exportable memory"};
Switch gAsyncSwitch{gAsyncMode, "cudaMallocAsync", "the runtime's pool",
                    "until MPI_Init finds a co-located peer that maps GPU memory through cuMem file descriptors"};

bool active(const Switch& w) {
  return w.active.load(std::memory_order_acquire) || w.mode.get().index == kExportable;
}

void activate(Switch& w, const char* why) {
  if (w.mode.get().index != kAuto || w.active.load()) return;
  {
    Heap& h = heap();
    std::lock_guard lock(h.mutex);
    w.why = why;
  }
  w.active.store(true, std::memory_order_release);
  CGDR_LOG(kInfo, kCuda, "%s now served by the exportable heap: %s", w.calls, why);
}

std::string state(Switch& w) {
  int mode = w.mode.get().index;
  std::string s = w.mode.name() + "=" + w.mode.get().name + ": ";
  if (mode == kOff) return s + w.runtime;
  if (mode == kExportable) return s + "exportable heap from the first call";
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  return s + (w.active.load() ? "exportable heap since MPI_Init (" + w.why + ")"
                              : std::string(w.runtime) + " " + w.awaiting);
}

}  // namespace

// After a reset of the GPU the heap serves no call, and no range counts as its own (its state - the
// events its deferred frees wait on, the streams they were recorded on - went with the context): the
// program's runtime answers them. (gpuStateLost, not gpuResetSeen: a reset the program made through
// the driver, cuDevicePrimaryCtxReset, reaches cgdr at no interposed call, and the heap would go on
// in its old state until a GPU message found the reset. On the H200 its chunks themselves outlived
// such a reset: gpu.reset_driver_middle passed without this too.)
bool exportableMallocActive() { return active(gMallocSwitch) && !gpuStateLost(); }
void activateExportableMalloc(const char* why) { activate(gMallocSwitch, why); }
std::string exportableMallocState() { return state(gMallocSwitch); }
bool exportableAsyncActive() { return active(gAsyncSwitch) && !gpuStateLost(); }
void activateExportableAsync(const char* why) { activate(gAsyncSwitch, why); }
std::string exportableAsyncState() { return state(gAsyncSwitch); }

void* heapAllocate(std::size_t n, int device, bool async, bool mayGrow) {
  if (n == 0 || !base::cuda::usable()) return nullptr;
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  std::uint64_t at = h.ranges.take(n, device);
  if (!at && !mayGrow) return nullptr;
  if (!at && grow(h, n, device)) at = h.ranges.take(n, device);
  if (!at && h.ranges.idleBytes()) {
    // The driver refused: what the heap keeps idle (on any device) goes back first.
    while (std::uint64_t base = h.ranges.oldestIdle()) {
      drop(h, base);
      ++h.trimmed;
    }
    if (grow(h, n, device)) at = h.ranges.take(n, device);
  }
  if (!at) {
    ++h.fallbacks;
    return nullptr;
  }
  ++(async ? h.asyncServed : h.served);
  gRangesVersion.fetch_add(1, std::memory_order_release);
  return reinterpret_cast<void*>(at);
}

int heapRangeOf(const void* p, std::size_t* size) {
  if (gpuStateLost()) return -1;
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  return h.ranges.rangeOf(reinterpret_cast<std::uint64_t>(p), size);
}

int heapHolding(const void* p, HeapPlace* place) {
  // The last answer this thread got, while the heap has not changed since: a program sends from
  // the same buffers again and again, and this is asked once per GPU message. It holds for the
  // whole live range found, else for that address alone.
  thread_local struct {
    std::uint64_t version = 0;
    std::uintptr_t lo = 0, hi = 0;
    HeapPlace place;
  } seen;
  std::uint64_t version = gRangesVersion.load(std::memory_order_acquire);
  if (version == 0) {
    *place = HeapPlace{};
    return 0;
  }
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (version != seen.version || addr < seen.lo || addr >= seen.hi) {
    Heap& h = heap();
    std::lock_guard lock(h.mutex);
    HeapPlace& s = seen.place;
    s = HeapPlace{};
    std::uint64_t start = 0, chunk = 0;
    s.where = h.ranges.holding(addr, &start, &s.size, &chunk);
    s.start = static_cast<std::uintptr_t>(start);
    if (s.where > 0) {
      auto c = h.chunks.find(chunk);
      if (c != h.chunks.end()) s.driver = c->second.driver;
    }
    seen.lo = s.where > 0 ? s.start : addr;
    seen.hi = s.where > 0 ? s.start + s.size : addr + 1;
    seen.version = gRangesVersion.load(std::memory_order_relaxed);
  }
  *place = seen.place;
  return seen.place.where;
}

void heapCountReused() {
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  ++h.asyncServed;
  ++h.reused;
}

bool heapRelease(const void* p, bool keep) {
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  std::uint64_t empty = 0;
  if (!h.ranges.give(reinterpret_cast<std::uint64_t>(p), &empty)) return false;
  gRangesVersion.fetch_add(1, std::memory_order_release);
  if (empty && keep) {
    // Kept, giving back the chunks idle longest where the limit would be passed (a program's
    // working set moves: the sizes it freed last are the ones it asks for next).
    auto c = h.chunks.find(empty);
    std::size_t limit = gAsyncKeep.get().value;
    if (c != h.chunks.end() && c->second.memory.size() <= limit) {
      while (h.ranges.idleBytes() + c->second.memory.size() > limit) {
        drop(h, h.ranges.oldestIdle());
        ++h.trimmed;
      }
      h.ranges.keepIdle(empty);
      return true;
    }
  }
  if (empty) drop(h, empty);
  return true;
}

void heapCountDeferred(bool captured) {
  Heap& h = heap();
  std::lock_guard lock(h.mutex);
  ++(captured ? h.captured : h.deferred);
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
  HeapStats s;
  s.served = h.served;
  s.asyncServed = h.asyncServed;
  s.fallbacks = h.fallbacks;
  s.deferred = h.deferred;
  s.reused = h.reused;
  s.captured = h.captured;
  s.trimmed = h.trimmed;
  s.chunks = t.chunks;
  s.chunkBytes = t.chunkBytes;
  s.sharedChunks = t.sharedChunks;
  s.live = t.live;
  s.liveBytes = t.liveBytes;
  s.idleChunks = t.idleChunks;
  s.idleBytes = t.idleBytes;
  return s;
}

}  // namespace cgdr::mem
