#include "channel/shm/advert.hpp"

#include <atomic>
#include <cstring>

namespace cgdr::channel::shm {
namespace {

constexpr std::uint64_t word(std::uint64_t idx, AdvertState s) { return idx << 2 | static_cast<std::uint64_t>(s); }
std::atomic_ref<std::uint64_t> stateOf(AdvertSlot& s) { return std::atomic_ref<std::uint64_t>(s.state); }

}  // namespace

std::uint64_t AdvertBoard::post(std::int32_t ctx, std::int32_t tag, std::uint64_t capacity, std::uint32_t seq,
                                const void* payload, std::size_t payloadBytes) {
  if (!slots_ || payloadBytes > kAdvertPayload) return 0;
  std::uint32_t k = static_cast<std::uint32_t>(next_ % n_);
  if (busy_[k / 64] & (std::uint64_t{1} << (k % 64))) return 0;
  AdvertSlot& s = slots_[k];
  s.ctx = ctx;
  s.tag = tag;
  s.capacity = capacity;
  s.seq = seq;
  s.payloadBytes = static_cast<std::uint32_t>(payloadBytes);
  if (payloadBytes) std::memcpy(s.payload, payload, payloadBytes);
  stateOf(s).store(word(next_, AdvertState::kPosted), std::memory_order_release);
  busy_[k / 64] |= std::uint64_t{1} << (k % 64);
  return next_++;
}

bool AdvertBoard::retract(std::uint64_t idx) {
  std::uint64_t want = word(idx, AdvertState::kPosted);
  return stateOf(slots_[idx % n_])
      .compare_exchange_strong(want, word(idx, AdvertState::kRetracted), std::memory_order_acq_rel);
}

void AdvertBoard::release(std::uint64_t idx) {
  std::uint32_t k = static_cast<std::uint32_t>(idx % n_);
  busy_[k / 64] &= ~(std::uint64_t{1} << (k % 64));
}

int AdvertBoard::delivered(std::uint64_t idx, std::uint64_t* len) const {
  AdvertSlot& s = slots_[idx % n_];
  // (the sender claims before its copy starts: a word for an advert not claimed is no delivery)
  if (stateOf(s).load(std::memory_order_acquire) != word(idx, AdvertState::kClaimed)) return -1;
  std::uint64_t w = std::atomic_ref<std::uint64_t>(s.delivered).load(std::memory_order_acquire);
  if ((w >> kDeliveredLenBits) != (deliveredWord(idx, 0) >> kDeliveredLenBits)) return 0;
  *len = w & kDeliveredMax;
  return 1;
}

bool AdvertReader::oldest(Advert* out) {
  if (!slots_) return false;
  while (true) {
    AdvertSlot& s = slots_[next_ % n_];
    std::uint64_t w = stateOf(s).load(std::memory_order_acquire);
    std::uint64_t idx = w >> 2;
    // An older index (or none): nothing posted past what this rank has seen.
    if (idx < next_) return false;
    // A later index: the receiver reused the slot, so next_ was resolved (retracted) before.
    if (idx > next_ || (w & 3) != static_cast<std::uint64_t>(AdvertState::kPosted)) {
      ++next_;
      continue;
    }
    out->idx = idx;
    out->ctx = s.ctx;
    out->tag = s.tag;
    out->capacity = s.capacity;
    out->seq = s.seq;
    out->payloadBytes = s.payloadBytes <= kAdvertPayload ? s.payloadBytes : 0;
    out->payload = s.payload;
    return true;
  }
}

bool AdvertReader::claim(std::uint64_t idx) {
  if (idx != next_) return false;
  ++next_;
  std::uint64_t want = word(idx, AdvertState::kPosted);
  return stateOf(slots_[idx % n_])
      .compare_exchange_strong(want, word(idx, AdvertState::kClaimed), std::memory_order_acq_rel);
}

}  // namespace cgdr::channel::shm
