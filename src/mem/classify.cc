#include "mem/classify.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>

#include "base/cuda.hpp"
#include "base/log.hpp"
#include "mem/host_cache.hpp"
#include "mem/vmm_heap.hpp"

namespace cgdr::mem {
namespace {

constexpr std::uintptr_t kPage = 4096;

// Probes one byte without touching it from this thread: the kernel reports EFAULT instead of
// the CPU faulting. process_vm_readv on ourselves first; a pipe write where seccomp forbids it.
bool probeByte(const void* p) {
  char b;
  iovec local{&b, 1};
  iovec remote{const_cast<void*>(p), 1};
  ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
  if (r == 1) return true;
  if (r < 0 && errno == EFAULT) return false;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return true;  // cannot probe: trust the driver's answer
  ssize_t w = write(fds[1], p, 1);
  int err = errno;
  close(fds[0]);
  close(fds[1]);
  return !(w < 0 && err == EFAULT);
}

base::Status bufferError(base::Errc code, const char* what, const void* p, std::size_t n, std::size_t room) {
  char msg[240];
  if (code == base::Errc::kBufferOverrun)
    snprintf(msg, sizeof msg, "buffer %p: the message's %zu bytes run past the end of %s (%zu bytes from %p to its end)",
             p, n, what, room, p);
  else
    snprintf(msg, sizeof msg, "buffer %p (%zu bytes) is %s", p, n, what);
  CGDR_LOG(kError, kMem, "%s", msg);
  return base::Status(code, msg);
}

}  // namespace

bool cpuReadable(const void* p, std::size_t n) {
  if (n == 0) return true;
  const char* c = static_cast<const char*>(p);
  return probeByte(c) && (n == 1 || probeByte(c + n - 1));
}

base::Result<MemInfo> classify(const void* p, std::size_t n) {
  if (n == 0 || !base::cuda::usable()) return MemInfo{};
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  HostCache& cache = hostCache();
  if (cache.contains(addr, n)) return MemInfo{};
  (void)watchUcmEvents();
  std::uint64_t gen = cache.mapGeneration();
  base::cuda::PointerAttrs a;
  if (base::cuda::queryPointer(p, true, &a)) {
    bool device = a.type == base::cuda::PointerAttrs::Type::kDevice;
    if (device || a.type == base::cuda::PointerAttrs::Type::kManaged) {
      // A count past the buffer's end would make a copy engine fault (the context is lost) or
      // read and write a neighbour's memory, and a buffer cudaFree gave back to cgdr's exportable
      // heap is still mapped: both refused before anything moves.
      std::uintptr_t hs = 0;
      std::size_t hn = 0;
      int heap = heapHolding(p, &hs, &hn);
      if (heap < 0)
        return bufferError(base::Errc::kInvalidBuffer, "freed GPU memory (a range of cgdr's exportable heap no "
                           "cudaMalloc holds)", p, n, 0);
      // cuMem allocations mapped back to back into one reserved range are one range to the driver
      // (measured on the H200: 3 of them, one range of their total size), so a buffer made that
      // way (PyTorch's expandable segments) is one buffer here too.
      std::uintptr_t end = heap > 0 ? hs + hn : a.rangeStart + a.rangeSize;
      if (a.rangeSize && (end <= addr || n > end - addr))
        return bufferError(base::Errc::kBufferOverrun,
                           heap > 0 ? "the cudaMalloc allocation holding it" : "the GPU allocation holding it", p, n,
                           end > addr ? end - addr : 0);
      return MemInfo{device ? MemKind::kDevice : MemKind::kManaged, a.device, a.bufferId, a.rangeStart,
                     a.rangeSize};
    }
  }
  // Not GPU memory: it must be readable host memory, or it is a dangling/foreign pointer.
  if (!cpuReadable(p, n))
    return bufferError(base::Errc::kInvalidBuffer,
                       "neither host memory nor a live GPU allocation (freed or foreign device pointer?)", p, n, 0);
  std::uintptr_t lo = addr & ~(kPage - 1);
  std::uintptr_t hi = (addr + n + kPage - 1) & ~(kPage - 1);
  cache.insert(lo, hi, gen);
  return MemInfo{};
}

}  // namespace cgdr::mem
