// Lock-free single-producer/single-consumer rings in shared memory: a byte ring of variable
// records (message envelopes with eager data) and a ring of fixed 64-byte control records.
// One process produces, one consumes; the producing side serialises its own threads.
#pragma once
#include <cstdint>

#include "channel/shm/layout.hpp"

namespace cgdr::channel::shm {

class MsgRing {
 public:
  MsgRing() = default;
  // `key` (the same on both sides, different per job and ring) makes stale bytes of an earlier
  // lap never look like a record.
  MsgRing(RingHeader* h, char* data, std::uint32_t bytes, std::uint64_t key)
      : h_(h), data_(data), cap_(bytes), key_(key) {}

  // Producer: space for a record of `bytes` (rounded up to 64), or nullptr if the ring is full.
  // Write the record there, then commit().
  MsgHeader* reserve(std::uint32_t bytes);
  void commit();
  // Consumer: the next record (pads skipped), nullptr if none; a malformed ring sets broken().
  const MsgHeader* peek();
  void pop();
  bool broken() const { return broken_; }
  // Credits: the consumer adds the eager bytes it matched; the producer checks that `sent` eager
  // bytes stay within `limit` of that total (reading the consumer's counter only when its last
  // reading says they might not).
  void addConsumed(std::uint64_t n);
  bool withinCredit(std::uint64_t sent, std::uint64_t limit);
  std::uint32_t capacity() const { return cap_; }

 private:
  RingHeader* h_ = nullptr;
  char* data_ = nullptr;
  std::uint32_t cap_ = 0;
  std::uint64_t key_ = 0;
  // Producer state.
  std::uint64_t tail_ = 0, headSeen_ = 0, pending_ = 0, consumedSeen_ = 0;
  MsgHeader* open_ = nullptr;  // the reserved record, stamped by commit()
  // Consumer state.
  std::uint64_t head_ = 0;
  bool broken_ = false;
};

class CtlRing {
 public:
  CtlRing() = default;
  CtlRing(RingHeader* h, CtlRecord* slots, std::uint32_t n) : h_(h), slots_(slots), n_(n) {}

  // Producer: false if the ring is full.
  bool push(const CtlRecord& r);
  // Consumer: the next record or nullptr; pop() releases it.
  const CtlRecord* peek();
  void pop();
  bool broken() const { return broken_; }

 private:
  bool broken_ = false;
  RingHeader* h_ = nullptr;
  CtlRecord* slots_ = nullptr;
  std::uint32_t n_ = 0;
  std::uint64_t tail_ = 0, headSeen_ = 0;
  std::uint64_t head_ = 0, tailSeen_ = 0;
};

}  // namespace cgdr::channel::shm
