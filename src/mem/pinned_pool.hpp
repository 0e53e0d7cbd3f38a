// A reusable pool of page-locked host buffers for staging GPU data: buffers are taken and given
// back per message, allocated from CUDA only when the pool has none of the size class.
#pragma once
#include <cstddef>

#include "base/status.hpp"

namespace cgdr::mem {

// A staging buffer borrowed from the pool; returns itself on destruction.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(void* p, std::size_t capacity) : ptr_(p), capacity_(capacity) {}
  PinnedBuffer(PinnedBuffer&& o) noexcept { *this = std::move(o); }
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() { release(); }

  void* data() const { return ptr_; }
  std::size_t capacity() const { return capacity_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  void release();

 private:
  void* ptr_ = nullptr;
  std::size_t capacity_ = 0;
};

// Counters for cgdr-info and tests.
struct PinnedPoolStats {
  std::size_t allocations = 0;   // buffers obtained from CUDA
  std::size_t reuses = 0;        // buffers served from the pool
  std::size_t bytesHeld = 0;     // bytes allocated and not freed
};

// Borrows a buffer of at least `bytes` (at least 4 KiB, power-of-two classes). When no GPU is
// usable the buffers are ordinary aligned host memory.
base::Result<PinnedBuffer> acquirePinned(std::size_t bytes);
PinnedPoolStats pinnedPoolStats();
// Frees every idle buffer (MPI_Finalize).
void drainPinnedPool();

}  // namespace cgdr::mem
