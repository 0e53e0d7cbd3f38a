#include "channel/shm/ring.hpp"

#include <atomic>

namespace cgdr::channel::shm {
namespace {

std::uint64_t load(const Counter& c) {
  return std::atomic_ref<const std::uint64_t>(c.value).load(std::memory_order_acquire);
}
void store(Counter& c, std::uint64_t v) { std::atomic_ref<std::uint64_t>(c.value).store(v, std::memory_order_release); }
std::uint32_t roundUp(std::uint32_t n) { return (n + kLine - 1) & ~static_cast<std::uint32_t>(kLine - 1); }

}  // namespace

MsgHeader* MsgRing::reserve(std::uint32_t bytes) {
  bytes = roundUp(bytes);
  if (bytes > cap_) return nullptr;
  std::uint64_t at = tail_ % cap_;
  std::uint64_t pad = at + bytes > cap_ ? cap_ - at : 0;
  std::uint64_t need = pad + bytes;
  if (tail_ + need - headSeen_ > cap_) {
    headSeen_ = load(h_->head);
    if (tail_ + need - headSeen_ > cap_) return nullptr;
  }
  if (pad) {
    auto* p = reinterpret_cast<MsgHeader*>(data_ + at);
    p->len = static_cast<std::uint32_t>(pad);
    p->type = static_cast<std::uint16_t>(RecType::kPad);
    std::atomic_ref<std::uint64_t>(p->stamp).store(tail_ ^ key_, std::memory_order_release);
    tail_ += pad;
    at = 0;
  }
  pending_ = bytes;
  auto* r = reinterpret_cast<MsgHeader*>(data_ + at);
  r->len = bytes;
  open_ = r;
  return r;
}

void MsgRing::commit() {
  std::atomic_ref<std::uint64_t>(open_->stamp).store(tail_ ^ key_, std::memory_order_release);
  tail_ += pending_;
  pending_ = 0;
  open_ = nullptr;  // no shared tail to publish: the consumer polls the stamps
}

const MsgHeader* MsgRing::peek() {
  while (true) {
    std::uint64_t at = head_ % cap_;
    const auto* r = reinterpret_cast<const MsgHeader*>(data_ + at);
    std::uint64_t stamp = std::atomic_ref<const std::uint64_t>(r->stamp).load(std::memory_order_acquire);
    if (stamp != (head_ ^ key_)) return nullptr;  // not written yet (or a stale lap)
    std::uint32_t len = r->len;
    if (len < kLine || len % kLine != 0 || at + len > cap_) {
      broken_ = true;
      return nullptr;
    }
    if (r->type != static_cast<std::uint16_t>(RecType::kPad)) return r;
    head_ += len;
    store(h_->head, head_);
  }
}

void MsgRing::pop() {
  const auto* r = reinterpret_cast<const MsgHeader*>(data_ + head_ % cap_);
  head_ += r->len;
  store(h_->head, head_);
}

void MsgRing::addConsumed(std::uint64_t n) {
  auto c = std::atomic_ref<std::uint64_t>(h_->consumed.value);
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_release);
}

bool MsgRing::withinCredit(std::uint64_t sent, std::uint64_t limit) {
  if (sent - consumedSeen_ <= limit) return true;
  consumedSeen_ = load(h_->consumed);
  return sent - consumedSeen_ <= limit;
}

bool CtlRing::push(const CtlRecord& r) {
  if (tail_ - headSeen_ >= n_) {
    headSeen_ = load(h_->head);
    if (tail_ - headSeen_ >= n_) return false;
  }
  slots_[tail_ % n_] = r;
  ++tail_;
  store(h_->tail, tail_);
  return true;
}

const CtlRecord* CtlRing::peek() {
  if (head_ == tailSeen_) {
    tailSeen_ = load(h_->tail);
    if (head_ == tailSeen_) return nullptr;
    if (tailSeen_ < head_ || tailSeen_ - head_ > n_) {
      broken_ = true;
      return nullptr;
    }
  }
  return &slots_[head_ % n_];
}

void CtlRing::pop() {
  ++head_;
  store(h_->head, head_);
}

}  // namespace cgdr::channel::shm
