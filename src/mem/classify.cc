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
    if (a.type == base::cuda::PointerAttrs::Type::kDevice)
      return MemInfo{MemKind::kDevice, a.device, a.bufferId, a.rangeStart, a.rangeSize};
    if (a.type == base::cuda::PointerAttrs::Type::kManaged)
      return MemInfo{MemKind::kManaged, a.device, a.bufferId, a.rangeStart, a.rangeSize};
  }
  // Not GPU memory: it must be readable host memory, or it is a dangling/foreign pointer.
  if (!cpuReadable(p, n)) {
    char msg[200];
    snprintf(msg, sizeof msg,
             "buffer %p (%zu bytes) is neither host memory nor a live GPU allocation "
             "(freed or foreign device pointer?)",
             p, n);
    CGDR_LOG(kError, kMem, "%s", msg);
    return base::Status(base::Errc::kInvalidBuffer, msg);
  }
  std::uintptr_t lo = addr & ~(kPage - 1);
  std::uintptr_t hi = (addr + n + kPage - 1) & ~(kPage - 1);
  cache.insert(lo, hi, gen);
  return MemInfo{};
}

}  // namespace cgdr::mem
