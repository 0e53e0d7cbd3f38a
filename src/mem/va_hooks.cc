// Interposes mmap/munmap/mremap so the host-range cache forgets any range whose mapping changes.
// The CUDA driver creates the virtual ranges of GPU allocations through these libc calls, so a
// range that became GPU memory is never still believed to be host memory. Calls glibc makes
// internally (malloc) bypass this, which is safe: they only ever create host memory.
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstddef>
#include <cstdint>

#include "mem/host_cache.hpp"

namespace {

using MmapFn = void* (*)(void*, size_t, int, int, int, off_t);
using MunmapFn = int (*)(void*, size_t);
using MremapFn = void* (*)(void*, size_t, size_t, int, ...);

std::atomic<MmapFn> gMmap{nullptr};
std::atomic<MunmapFn> gMunmap{nullptr};
std::atomic<MremapFn> gMremap{nullptr};

template <class Fn>
Fn resolve(std::atomic<Fn>& slot, const char* name) {
  Fn f = slot.load(std::memory_order_acquire);
  if (!f) {
    f = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    slot.store(f, std::memory_order_release);
  }
  return f;
}

void forget(void* addr, size_t len) {
  auto lo = reinterpret_cast<std::uintptr_t>(addr);
  cgdr::mem::hostCache().invalidate(lo, lo + len);
}

void* doMmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  MmapFn real = resolve(gMmap, "mmap");
  void* p = real ? real(addr, len, prot, flags, fd, off)
                 : reinterpret_cast<void*>(syscall(SYS_mmap, addr, len, prot, flags, fd, off));
  if (p != MAP_FAILED) forget(p, len);
  return p;
}

// UCX's memory hooks (libucm, loaded by UCX-based MPIs) patch mmap/mremap in place, so calls can
// bypass the symbols above. Where libucm is loaded, cgdr subscribes to its VM events instead.
// The layout below is UCM's public ABI (ucm/api/ucm.h: UCM_EVENT_VM_MAPPED = bit 16, ...).
constexpr int kUcmVmMapped = 1 << 16;
constexpr int kUcmVmUnmapped = 1 << 17;
struct UcmVmEvent {
  void* address;
  size_t size;
};
using UcmCallback = void (*)(int type, UcmVmEvent* event, void* arg);
using UcmSetHandler = int (*)(int events, int priority, UcmCallback cb, void* arg);
std::atomic<bool> gUcmSubscribed{false};

void onUcmEvent(int, UcmVmEvent* e, void*) { forget(e->address, e->size); }

// How many objects the dynamic loader has loaded so far (it counts every dlopen).
unsigned long long loadCount() {
  static std::atomic<unsigned long long> calls{0};
  unsigned long long adds = ~0ull - ++calls;  // without the loader's count: a new value per call
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* out) {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
          *static_cast<unsigned long long*>(out) = info->dlpi_adds;
        return 1;  // the first object carries the count: stop there
      },
      &adds);
  return adds;
}

}  // namespace

namespace cgdr::mem {

bool watchUcmEvents() {
  if (gUcmSubscribed.load(std::memory_order_acquire)) return true;
  // A miss of dlsym(RTLD_DEFAULT) walks every loaded object (0.4 us and more per call, paid by
  // every GPU buffer's classification); libucm can only have appeared since the last miss if
  // an object was loaded since, which the loader's count of loads tells at the cost of a lock.
  static std::atomic<unsigned long long> missedAtLoads{~0ull};
  unsigned long long loads = loadCount();
  if (loads == missedAtLoads.load(std::memory_order_relaxed)) return false;
  auto set = reinterpret_cast<UcmSetHandler>(dlsym(RTLD_DEFAULT, "ucm_set_event_handler"));
  if (!set) {
    missedAtLoads.store(loads, std::memory_order_relaxed);
    return false;
  }
  if (set(kUcmVmMapped | kUcmVmUnmapped, 0, onUcmEvent, nullptr) != 0) return false;
  gUcmSubscribed.store(true, std::memory_order_release);
  hostCache().clear();  // whatever happened before the subscription is unknown
  return true;
}

}  // namespace cgdr::mem

extern "C" {

__attribute__((visibility("default"))) void* mmap(void* addr, size_t len, int prot, int flags,
                                                  int fd, off_t off) {
  return doMmap(addr, len, prot, flags, fd, off);
}

__attribute__((visibility("default"))) void* mmap64(void* addr, size_t len, int prot, int flags,
                                                    int fd, off_t off) {
  return doMmap(addr, len, prot, flags, fd, off);
}

__attribute__((visibility("default"))) int munmap(void* addr, size_t len) {
  forget(addr, len);
  MunmapFn real = resolve(gMunmap, "munmap");
  return real ? real(addr, len) : static_cast<int>(syscall(SYS_munmap, addr, len));
}

__attribute__((visibility("default"))) void* mremap(void* old, size_t oldLen, size_t newLen,
                                                    int flags, ...) {
  void* newAddr = nullptr;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    newAddr = va_arg(ap, void*);
    va_end(ap);
  }
  forget(old, oldLen);
  MremapFn real = resolve(gMremap, "mremap");
  void* p = real ? real(old, oldLen, newLen, flags, newAddr)
                 : reinterpret_cast<void*>(syscall(SYS_mremap, old, oldLen, newLen, flags, newAddr));
  if (p != MAP_FAILED) forget(p, newLen);
  return p;
}

}  // extern "C"
