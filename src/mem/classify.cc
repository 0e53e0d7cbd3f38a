#include "mem/classify.hpp"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdint>
#include <cstdio>

#include "base/cuda.hpp"
#include "base/log.hpp"
#include "mem/host_cache.hpp"
#include "mem/resident.hpp"
#include "mem/vmm.hpp"
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

// A buffer refused: the status and its message (printf-style). The caller raises it, and raising
// logs it as an error; here it is logged for debugging only (CGDR_LOG_LEVEL=debug, subsystem mem).
__attribute__((format(printf, 2, 3))) base::Status refuse(base::Errc code, const char* fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  CGDR_LOG(kDebug, kMem, "refused: %s", msg);
  return base::Status(code, msg);
}

// A cudaMemcpy into a GPU buffer from pageable memory may return before its bytes land, and
// cgdr reads (or writes) the buffer on its own streams or from the peer's process, which do not
// wait for the program's: a message sent right after such a copy carried the buffer's old bytes
// (seen on an H100: a collective right after cudaMemcpy sent zeros). Each device allocation is
// marked SYNC_MEMOPS the first time it is classified (the driver then waits for the copies still
// pending, and later ones are synchronous as documented), as Open MPI does. The driver takes no
// mark on cuMem memory: the context is flagged instead, which the first time waits for its work.
// (The exportable heap's buffers, cuMem memory too, are not tried: the heap flags the context when
// it grows, before any copy into them. Managed memory: its copies are always synchronous.)
// The ids marked are remembered in one table of the process, slot id mod its size: ids are never
// reused, so an entry never goes stale, and the driver numbers allocations in turn, so the last
// kMarked allocations made never evict one another. A miss (an evicted id, or two threads racing
// on one slot) only costs the driver call again. (Release/acquire: an id seen here was marked.)
void syncMemopsOnce(const void* p, int device, std::uint64_t bufferId) {
  constexpr std::size_t kMarked = 1024;
  static std::atomic<std::uint64_t> marked[kMarked];
  if (bufferId == 0) return;
  std::atomic<std::uint64_t>& slot = marked[bufferId % kMarked];
  if (slot.load(std::memory_order_acquire) == bufferId) return;
  if (!base::cuda::setSyncMemops(p)) (void)base::cuda::setContextSyncMemops(device, true);  // (warns once if not)
  slot.store(bufferId, std::memory_order_release);
}

// Whether [addr, last) reaches into two blocks of `block` bytes (a power of two).
bool spansBlocks(std::uintptr_t addr, std::uintptr_t last, std::size_t block) {
  return (addr & ~(block - 1)) != ((last - 1) & ~(block - 1));
}

std::atomic<bool> gGpuState{false};
std::atomic<bool> gGpuReset{false};

// Per device, the context noteGpuState was first called in: its handle (0: none yet) and ID.
constexpr int kMadeInDevices = 64;
struct MadeIn {
  std::atomic<std::uintptr_t> handle{0};
  std::atomic<std::uint64_t> id{0};
};
MadeIn gMadeIn[kMadeInDevices];
std::atomic<int> gMadeInEnd{0};  // (entries at and past it are empty)

void rememberContext() {
  std::uintptr_t handle = 0;
  std::uint64_t id = 0;
  int device = -1;
  if (!base::cuda::currentContext(&handle, &id, &device) || device < 0 || device >= kMadeInDevices) return;
  MadeIn& m = gMadeIn[device];
  if (m.handle.load(std::memory_order_acquire) != 0) return;
  m.id.store(id, std::memory_order_relaxed);  // (threads racing here store the same context's)
  m.handle.store(handle, std::memory_order_release);
  int end = gMadeInEnd.load(std::memory_order_relaxed);
  while (end <= device && !gMadeInEnd.compare_exchange_weak(end, device + 1, std::memory_order_release)) {
  }
}

// How the reset that ended cgdr's GPU state was made, for the refusals that follow.
std::atomic<const char*> gResetHow{"cudaDeviceReset"};

// The one place cgdr's GPU state is marked gone, however the reset was found: from here on no GPU
// buffer of this process is moved (gpuResetSeen), and the resident kernels' mailboxes, which went
// with the context, are no longer touched. True for the call that marked it.
bool markGpuStateGone(const char* how) {
  if (gGpuReset.load(std::memory_order_acquire)) return false;
  gResetHow.store(how, std::memory_order_relaxed);
  if (gGpuReset.exchange(true, std::memory_order_acq_rel)) return false;
  residentForget();
  return true;
}

// A GPU buffer's n bytes from p (driver attributes a; heap > 0: in cgdr's exportable heap, at hp)
// must end within the allocation holding them, and on mapped memory.
base::Status checkExtent(const void* p, std::size_t n, const base::cuda::PointerAttrs& a, bool device, int heap,
                         const HeapPlace& hp) {
  // cuMem allocations mapped back to back into one reserved range are one range to the driver
  // (measured on the H200: 3 of them, one range of their total size), so a buffer made that
  // way (PyTorch's expandable segments) is one buffer here too. (A range of unknown size ends
  // at its start: nothing is refused.)
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  std::uintptr_t end = heap > 0 ? hp.start + hp.size : a.rangeStart + a.rangeSize;
  if (end > addr && n > end - addr)
    return refuse(base::Errc::kBufferOverrun,
                  "buffer %p: the message's %zu bytes run past the end of the %s allocation holding it (%zu "
                  "bytes from it to its end)",
                  p, n, heap > 0 ? "cudaMalloc" : "GPU", static_cast<std::size_t>(end - addr));
  // A reserved range is one range to the driver however much of it is mapped: past the mapping
  // holding p, each next one must begin where the last ends until the buffer's end, or a copy
  // faults or the driver refuses it mid-message. Mappings start and end on the device's
  // allocation granularity (asked once: 2 MiB on an H100), so a buffer inside one such block -
  // every small message - cannot cross one and is not asked about. Otherwise one query per
  // mapping (~95 ns on an H100, BM_ClassifyDevicePieces): one for cudaMalloc memory (one mapping
  // from 4 KiB to 64 MiB, measured), 13 for 256 MiB of PyTorch's 20 MiB pieces. (Managed
  // memory is one range; where the driver cannot name the first mapping nothing is refused.)
  std::uintptr_t last = addr + n;
  if (device && heap == 0 && spansBlocks(addr, last, mappingGranule(a.device))) {
    std::uintptr_t mapped = base::cuda::mappingEnd(addr);
    while (mapped != 0 && mapped < last) {
      std::uintptr_t next = base::cuda::mappingEnd(mapped);
      if (next == 0)
        return refuse(base::Errc::kBufferHole,
                      "buffer %p: the message's %zu bytes run past the mapped memory of the GPU range holding it "
                      "(%zu bytes from it on are mapped, then a hole nothing is mapped to)",
                      p, n, static_cast<std::size_t>(mapped - addr));
      mapped = next;
    }
  }
  return base::Status::ok();
}

}  // namespace

void noteGpuState() {
  rememberContext();
  if (!gGpuState.load(std::memory_order_relaxed)) gGpuState.store(true, std::memory_order_release);
}

bool gpuStateLost() {
  if (gpuResetSeen()) return true;
  int end = gMadeInEnd.load(std::memory_order_acquire);
  for (int d = 0; d < end; ++d) {
    std::uintptr_t handle = gMadeIn[d].handle.load(std::memory_order_acquire);
    std::uint64_t id = 0;
    if (!handle || (base::cuda::contextId(handle, &id) && id == gMadeIn[d].id.load(std::memory_order_relaxed)))
      continue;
    if (markGpuStateGone("cudaDeviceReset, cuDevicePrimaryCtxReset or cuCtxDestroy"))
      CGDR_LOG(kWarn, kMem, "the context of GPU %d that cgdr made its GPU state in was reset or destroyed behind it "
               "(a statically linked CUDA runtime's cudaDeviceReset, cuDevicePrimaryCtxReset, cuCtxDestroy): from here "
               "on cgdr moves no GPU buffer of this process", d);
    return true;
  }
  return false;
}
std::uintptr_t workContext(int device) {
  return device >= 0 && device < kMadeInDevices ? gMadeIn[device].handle.load(std::memory_order_acquire) : 0;
}
bool noteGpuReset() { return gGpuState.load(std::memory_order_acquire) && markGpuStateGone("cudaDeviceReset"); }
bool gpuResetSeen() { return gGpuReset.load(std::memory_order_acquire); }

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
  // cgdr's exportable heap answers for its own buffers (what cudaMalloc gave the program, and the
  // driver's view of the chunk around it, asked when the chunk was made); any other pointer, and a
  // heap chunk the driver could not be asked about, is the driver's to classify.
  HeapPlace hp;
  int heap = heapHolding(p, &hp);
  base::cuda::PointerAttrs a = hp.driver;
  bool known = heap > 0 && a.type == base::cuda::PointerAttrs::Type::kDevice;
  if (!known) {
    known = base::cuda::queryPointer(p, true, &a);
    if (known && a.type != base::cuda::PointerAttrs::Type::kDevice) heap = 0;  // (the heap holds device memory only)
  }
  if (known) {
    bool device = a.type == base::cuda::PointerAttrs::Type::kDevice;
    if (device || a.type == base::cuda::PointerAttrs::Type::kManaged) {
      if (gpuStateLost())
        return refuse(base::Errc::kGpuReset,
                      "buffer %p (%zu bytes) is %s memory of GPU %d, after the program's %s: cgdr's GPU "
                      "state went with the reset, so it moves no GPU buffer any more (reset a GPU only after the last "
                      "MPI call that uses GPU memory)",
                      p, n, device ? "device" : "managed", a.device, gResetHow.load(std::memory_order_relaxed));
      // A count past the buffer's end would make a copy engine fault (the context is lost) or
      // read and write a neighbour's memory, and a buffer cudaFree gave back to cgdr's exportable
      // heap is still mapped: both refused before anything moves.
      if (heap < 0)
        return refuse(base::Errc::kInvalidBuffer,
                      "buffer %p (%zu bytes) is freed GPU memory (a range of cgdr's exportable heap no cudaMalloc holds)",
                      p, n);
      if (base::Status st = checkExtent(p, n, a, device, heap, hp); !st.isOk()) return st;
      // (The heap's memory takes no mark: the heap flagged the context when it grew.)
      if (device && heap == 0) syncMemopsOnce(p, a.device, a.bufferId);
      return MemInfo{device ? MemKind::kDevice : MemKind::kManaged, a.device, a.bufferId, a.rangeStart,
                     a.rangeSize};
    }
  }
  // Not GPU memory: it must be readable host memory, or it is a dangling/foreign pointer.
  if (!cpuReadable(p, n))
    return refuse(base::Errc::kInvalidBuffer,
                  "buffer %p (%zu bytes) is neither host memory nor a live GPU allocation (freed or foreign device "
                  "pointer?)",
                  p, n);
  std::uintptr_t lo = addr & ~(kPage - 1);
  std::uintptr_t hi = (addr + n + kPage - 1) & ~(kPage - 1);
  cache.insert(lo, hi, gen);
  return MemInfo{};
}

}  // namespace cgdr::mem
