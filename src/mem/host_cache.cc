#include "mem/host_cache.hpp"

#include <sched.h>

namespace cgdr::mem {

namespace {
constinit HostCache gCache;
}

HostCache& hostCache() { return gCache; }

bool HostCache::contains(std::uintptr_t p, std::size_t n) const {
  std::uint64_t s1 = seq_.load(std::memory_order_acquire);
  if (s1 & 1) return false;
  const Slot& slot = slots_[slotOf(p)];
  std::uintptr_t lo = slot.lo.load(std::memory_order_relaxed);
  std::uintptr_t hi = slot.hi.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (seq_.load(std::memory_order_relaxed) != s1) return false;
  return lo <= p && p + n <= hi && p + n >= p;
}

void HostCache::lock() {
  while (writer_.test_and_set(std::memory_order_acquire)) sched_yield();
  seq_.fetch_add(1, std::memory_order_acq_rel);
}

void HostCache::unlock() {
  seq_.fetch_add(1, std::memory_order_release);
  writer_.clear(std::memory_order_release);
}

void HostCache::insert(std::uintptr_t lo, std::uintptr_t hi, std::uint64_t g) {
  lock();
  if (mapGen_.load(std::memory_order_acquire) == g) {
    Slot& s = slots_[slotOf(lo)];
    s.lo.store(lo, std::memory_order_relaxed);
    s.hi.store(hi, std::memory_order_relaxed);
  }
  unlock();
}

void HostCache::invalidate(std::uintptr_t lo, std::uintptr_t hi) {
  lock();
  mapGen_.fetch_add(1, std::memory_order_acq_rel);
  for (Slot& s : slots_) {
    std::uintptr_t slo = s.lo.load(std::memory_order_relaxed);
    std::uintptr_t shi = s.hi.load(std::memory_order_relaxed);
    if (slo < hi && lo < shi) {
      s.lo.store(0, std::memory_order_relaxed);
      s.hi.store(0, std::memory_order_relaxed);
    }
  }
  unlock();
}

void HostCache::clear() { invalidate(0, ~std::uintptr_t{0}); }

std::size_t HostCache::size() const {
  std::size_t n = 0;
  for (const Slot& s : slots_) n += s.hi.load(std::memory_order_relaxed) != 0;
  return n;
}

}  // namespace cgdr::mem
