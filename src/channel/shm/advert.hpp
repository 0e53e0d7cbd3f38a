// Receives advertised before their message comes ("the receiver's buffer first"): a receiving
// rank describes a posted receive to the one co-located sender it names, in slots of its own
// segment; that sender may claim the oldest advert still posted and then delivers the message
// itself (for the engine: one GPU copy into the described buffer, then a completion record),
// without an envelope, a match at the receiver or a request for the bytes.
//
// A claimed advert ends with the sender's ADVERT_DONE control record, or (where its GPU's resident
// copy kernel made the copy: mem/resident.hpp) with the slot's `delivered` word written by that
// kernel right after the copy's system-scope fence: deliveredWord(idx, len). The receiver polls
// the words of its live adverts; each claimed advert ends one way only.
//
// Slots are used in the order of a monotonic index (idx, from 1; slot idx % n). The receiver
// posts, retracts (compare-and-swap from kPosted: it loses only to a claim) and releases a slot
// once its advert is resolved; the sender claims (compare-and-swap from kPosted) and walks past
// retracted adverts. Which adverts a sender may claim at all (matching order) is the engine's
// rule; this class only makes each advert end exactly once, claimed or retracted.
#pragma once
#include <cstddef>
#include <cstdint>

#include "channel/shm/layout.hpp"

namespace cgdr::channel::shm {

// The `delivered` word of advert idx with len bytes (len <= kDeliveredMax): the index's low 40 bits
// above the length, so a word left in the slot by an earlier advert never reads as this one's.
constexpr int kDeliveredLenBits = 24;
constexpr std::uint64_t kDeliveredMax = (std::uint64_t{1} << kDeliveredLenBits) - 1;
constexpr std::uint64_t deliveredWord(std::uint64_t idx, std::uint64_t len) {
  return idx << kDeliveredLenBits | (len & kDeliveredMax);
}

struct Advert {
  std::uint64_t idx = 0;
  std::int32_t ctx = 0, tag = 0;
  std::uint64_t capacity = 0;
  std::uint32_t seq = 0;
  std::uint32_t payloadBytes = 0;
  const char* payload = nullptr;  // in the slot: valid while the advert is posted (copy it, then claim)
};

// The receiver's side: its adverts to one sender.
class AdvertBoard {
 public:
  AdvertBoard() = default;
  AdvertBoard(AdvertSlot* slots, std::uint32_t n) : slots_(slots), n_(n) {}
  // Posts an advert; its idx, or 0 if the slot it needs is still in use (or payload too large).
  std::uint64_t post(std::int32_t ctx, std::int32_t tag, std::uint64_t capacity, std::uint32_t seq,
                     const void* payload, std::size_t payloadBytes);
  // Withdraws a posted advert: true; false if the sender claimed it first.
  bool retract(std::uint64_t idx);
  // The advert's slot may be used again (it was retracted, or its claimed message arrived).
  void release(std::uint64_t idx);
  // Whether the sender wrote advert idx's `delivered` word (slot not released): 1 and its length;
  // 0 claimed, not yet; -1 not claimed (a word there is no delivery).
  int delivered(std::uint64_t idx, std::uint64_t* len) const;
  bool usable() const { return slots_ != nullptr; }

 private:
  AdvertSlot* slots_ = nullptr;
  std::uint32_t n_ = 0;
  std::uint64_t next_ = 1;
  std::uint64_t busy_[(kAdvertSlots + 63) / 64] = {};  // slots not yet released (n_ <= kAdvertSlots)
};

// The sender's side: a receiver's adverts to this rank.
class AdvertReader {
 public:
  AdvertReader() = default;
  AdvertReader(AdvertSlot* slots, std::uint32_t n) : slots_(slots), n_(n) {}
  // The oldest advert still posted, past those retracted meanwhile; false if none is.
  bool oldest(Advert* out);
  // Claims the advert `oldest` returned: true, or false if the receiver retracted it meanwhile.
  // Either way that advert is done with here.
  bool claim(std::uint64_t idx);
  // The `delivered` word of advert idx (claimed by this rank), for deliveredWord(idx, len).
  std::uint64_t* deliveredAt(std::uint64_t idx) const { return &slots_[idx % n_].delivered; }

 private:
  AdvertSlot* slots_ = nullptr;
  std::uint32_t n_ = 0;
  std::uint64_t next_ = 1;
};

}  // namespace cgdr::channel::shm
