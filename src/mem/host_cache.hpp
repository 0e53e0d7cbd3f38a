// A cache of address ranges the driver said are ordinary host memory, so a host pointer is
// classified without the ~0.5 us driver query. It is emptied of a range whenever that range is
// (re)mapped: GPU memory can only appear at an address through a new mapping, and the CUDA driver
// maps through libc's mmap, which cgdr interposes (va_hooks.cc).
#pragma once
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cgdr::mem {

class HostCache {
 public:
  static constexpr std::size_t kSlots = 1024;

  // True if [p, p+n) lies inside a range known to be host memory. Lock-free, ~10 ns.
  bool contains(std::uintptr_t p, std::size_t n) const;
  // Generation of the address map; read before a driver query, passed to insert().
  std::uint64_t mapGeneration() const { return mapGen_.load(std::memory_order_acquire); }
  // Records [lo, hi) as host unless the address map changed since generation g.
  void insert(std::uintptr_t lo, std::uintptr_t hi, std::uint64_t g);
  // Forgets every range overlapping [lo, hi): called when that range is mapped or unmapped.
  void invalidate(std::uintptr_t lo, std::uintptr_t hi);
  // Forgets everything.
  void clear();
  std::size_t size() const;

 private:
  struct Slot {
    std::atomic<std::uintptr_t> lo{0};
    std::atomic<std::uintptr_t> hi{0};
  };
  static std::size_t slotOf(std::uintptr_t p) { return (p >> 12) * 0x9E3779B97F4A7C15ull >> 54; }
  void lock();
  void unlock();

  Slot slots_[kSlots];
  std::atomic<std::uint64_t> seq_{0};     // seqlock: odd while a writer changes slots
  std::atomic<std::uint64_t> mapGen_{0};  // bumped by every invalidation
  std::atomic_flag writer_ = ATOMIC_FLAG_INIT;
};

// The process-wide cache (constant-initialized, usable from the mmap hooks at any time).
HostCache& hostCache();

// Subscribes to UCX's memory events when libucm is loaded (its hooks can bypass cgdr's mmap
// symbols). Returns true once subscribed; cheap afterwards. Defined in va_hooks.cc.
bool watchUcmEvents();

}  // namespace cgdr::mem
