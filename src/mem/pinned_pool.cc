#include "mem/pinned_pool.hpp"

#include <bit>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/log.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::mem {
namespace {

base::Setting<base::Bytes> gPoolMax("CGDR_PINNED_POOL_MAX", "1G", "bytes",
                                    "Idle pinned staging memory kept for reuse; more is freed.");

constexpr std::size_t kMinClass = 4096;
constexpr int kClasses = 48;

struct Pool {
  std::mutex mutex;
  std::vector<void*> free[kClasses];
  std::size_t idleBytes = 0;
  PinnedPoolStats stats;
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may be returned during exit
  return *p;
}

int classOf(std::size_t bytes) {
  std::size_t c = std::bit_ceil(bytes < kMinClass ? kMinClass : bytes);
  return std::countr_zero(c);
}

void* allocate(std::size_t bytes) {
#if CGDR_HAVE_CUDA
  if (base::cuda::usable()) {
    void* p = nullptr;
    cudaError_t e = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    if (e == cudaSuccess) return p;
    CGDR_LOG(kError, kMem, "cudaHostAlloc(%zu): %s", bytes, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return nullptr;
  }
#endif
  return std::aligned_alloc(kMinClass, bytes);
}

void deallocate(void* p) {
#if CGDR_HAVE_CUDA
  if (base::cuda::usable()) {
    cudaFreeHost(p);
    return;
  }
#endif
  std::free(p);
}

// Size class of a live buffer is its capacity; kept with the buffer by the caller.
void giveBack(void* p, std::size_t capacity) {
  Pool& pl = pool();
  std::lock_guard lock(pl.mutex);
  if (pl.idleBytes + capacity > gPoolMax.get().value) {
    deallocate(p);
    pl.stats.bytesHeld -= capacity;
    return;
  }
  pl.free[std::countr_zero(capacity)].push_back(p);
  pl.idleBytes += capacity;
}

}  // namespace

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    ptr_ = o.ptr_;
    capacity_ = o.capacity_;
    o.ptr_ = nullptr;
    o.capacity_ = 0;
  }
  return *this;
}

void PinnedBuffer::release() {
  if (ptr_) giveBack(ptr_, capacity_);
  ptr_ = nullptr;
  capacity_ = 0;
}

base::Result<PinnedBuffer> acquirePinned(std::size_t bytes) {
  int c = classOf(bytes);
  if (c >= kClasses) return base::Status(base::Errc::kNoMemory, "staging request too large");
  std::size_t capacity = std::size_t{1} << c;
  Pool& pl = pool();
  {
    std::lock_guard lock(pl.mutex);
    if (!pl.free[c].empty()) {
      void* p = pl.free[c].back();
      pl.free[c].pop_back();
      pl.idleBytes -= capacity;
      ++pl.stats.reuses;
      return PinnedBuffer(p, capacity);
    }
  }
  void* p = allocate(capacity);
  if (!p) {
    return base::Status(base::Errc::kNoMemory,
                        "cannot allocate " + std::to_string(capacity) + " bytes of pinned memory");
  }
  std::lock_guard lock(pl.mutex);
  ++pl.stats.allocations;
  pl.stats.bytesHeld += capacity;
  return PinnedBuffer(p, capacity);
}

PinnedPoolStats pinnedPoolStats() {
  Pool& pl = pool();
  std::lock_guard lock(pl.mutex);
  return pl.stats;
}

void drainPinnedPool() {
  Pool& pl = pool();
  std::lock_guard lock(pl.mutex);
  for (int c = 0; c < kClasses; ++c) {
    for (void* p : pl.free[c]) {
      deallocate(p);
      pl.stats.bytesHeld -= std::size_t{1} << c;
    }
    pl.free[c].clear();
  }
  pl.idleBytes = 0;
}

}  // namespace cgdr::mem
