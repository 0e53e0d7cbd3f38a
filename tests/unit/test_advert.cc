// Adverts (channel/shm/advert.hpp): a receiver's posted receives offered to one sender. Each
// advert ends exactly once, claimed by the sender or retracted by the receiver; the sender sees
// them oldest first, past retracted ones, also where the receiver reused their slots; the last
// test races a real second process against the receiver over shared memory.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <vector>

#include "channel/shm/advert.hpp"

using namespace cgdr::channel::shm;

namespace {

struct Slots {
  std::vector<AdvertSlot> v = std::vector<AdvertSlot>(kAdvertSlots);
  Slots() { std::memset(v.data(), 0, v.size() * sizeof(AdvertSlot)); }
  AdvertSlot* data() { return v.data(); }
};

std::uint64_t post(AdvertBoard& b, int tag, std::uint32_t seq = 0) {
  char payload[24];
  std::snprintf(payload, sizeof payload, "buffer of tag %d", tag);
  return b.post(3, tag, 1000u + static_cast<unsigned>(tag), seq, payload, sizeof payload);
}

}  // namespace

TEST(Advert, PostedIsSeenWithItsFieldsAndClaimedOnce) {
  Slots s;
  AdvertBoard board(s.data(), kAdvertSlots);
  AdvertReader reader(s.data(), kAdvertSlots);
  Advert a;
  EXPECT_FALSE(reader.oldest(&a)) << "nothing posted yet";
  std::uint64_t idx = post(board, 7, 5);
  ASSERT_EQ(idx, 1u);
  ASSERT_TRUE(reader.oldest(&a));
  EXPECT_EQ(a.idx, idx);
  EXPECT_EQ(a.ctx, 3);
  EXPECT_EQ(a.tag, 7);
  EXPECT_EQ(a.capacity, 1007u);
  EXPECT_EQ(a.seq, 5u);
  ASSERT_EQ(a.payloadBytes, 24u);
  EXPECT_STREQ(a.payload, "buffer of tag 7");
  EXPECT_TRUE(reader.claim(idx));
  EXPECT_FALSE(reader.claim(idx)) << "claimed twice";
  EXPECT_FALSE(reader.oldest(&a)) << "a claimed advert is not offered again";
  EXPECT_FALSE(board.retract(idx)) << "the receiver must not retract what the sender claimed";
}

TEST(Advert, OldestFirstPastRetracted) {
  Slots s;
  AdvertBoard board(s.data(), kAdvertSlots);
  AdvertReader reader(s.data(), kAdvertSlots);
  std::uint64_t a1 = post(board, 1), a2 = post(board, 2), a3 = post(board, 3);
  EXPECT_TRUE(board.retract(a1));
  Advert a;
  ASSERT_TRUE(reader.oldest(&a));
  EXPECT_EQ(a.idx, a2);
  EXPECT_EQ(a.tag, 2);
  ASSERT_TRUE(reader.oldest(&a));
  EXPECT_EQ(a.idx, a2) << "not claimed: still the oldest";
  EXPECT_TRUE(reader.claim(a2));
  ASSERT_TRUE(reader.oldest(&a));
  EXPECT_EQ(a.idx, a3);
  EXPECT_TRUE(board.retract(a3));
  EXPECT_FALSE(reader.claim(a3)) << "retracted between the look and the claim";
  EXPECT_FALSE(reader.oldest(&a));
  std::uint64_t a4 = post(board, 4);
  ASSERT_TRUE(reader.oldest(&a));
  EXPECT_EQ(a.idx, a4);
  EXPECT_FALSE(reader.claim(a4 + 1)) << "only the advert offered can be claimed";
  EXPECT_TRUE(reader.claim(a4));
}

TEST(Advert, SlotsAreReusedOnlyAfterReleaseAndALaggingSenderSkipsThem) {
  Slots s;
  AdvertBoard board(s.data(), kAdvertSlots);
  AdvertReader reader(s.data(), kAdvertSlots);
  std::vector<std::uint64_t> ids;
  for (std::uint32_t i = 0; i < kAdvertSlots; ++i) ids.push_back(post(board, static_cast<int>(i)));
  EXPECT_EQ(ids.back(), kAdvertSlots);
  EXPECT_EQ(post(board, 99), 0u) << "every slot in use";
  EXPECT_TRUE(board.retract(ids[0]));
  EXPECT_EQ(post(board, 99), 0u) << "retracted but not released";
  board.release(ids[0]);
  std::uint64_t reused = post(board, 99);
  EXPECT_EQ(reused, kAdvertSlots + 1u);
  for (std::size_t i = 1; i < ids.size(); ++i) EXPECT_TRUE(board.retract(ids[i]));
  Advert a;
  ASSERT_TRUE(reader.oldest(&a)) << "the sender never looked before: it must find the one posted last";
  EXPECT_EQ(a.idx, reused);
  EXPECT_EQ(a.tag, 99);
  EXPECT_TRUE(reader.claim(reused));
  char big[kAdvertPayload + 1] = {};
  for (std::size_t i = 1; i < ids.size(); ++i) board.release(ids[i]);
  EXPECT_EQ(board.post(0, 0, 1, 0, big, sizeof big), 0u) << "a payload larger than a slot";
}

// The `delivered` word a sender (or its GPU) sets instead of ADVERT_DONE: read as delivered only
// for the advert it names, with its length; what an earlier advert of the same slot left there,
// or a word naming another index, never reads as this advert's.
TEST(Advert, DeliveredWordNamesItsAdvertAndLength) {
  Slots s;
  AdvertBoard board(s.data(), kAdvertSlots);
  AdvertReader reader(s.data(), kAdvertSlots);
  std::uint64_t len = 99;
  std::uint64_t first = post(board, 1);
  EXPECT_EQ(board.delivered(first, &len), -1) << "nothing written, not claimed";
  *reader.deliveredAt(first) = deliveredWord(first, 17);
  EXPECT_EQ(board.delivered(first, &len), -1) << "a word for an advert nobody claimed";
  ASSERT_TRUE(reader.claim(first));
  *reader.deliveredAt(first) = deliveredWord(first + 1, 17);
  EXPECT_EQ(board.delivered(first, &len), 0) << "a word naming another advert";
  *reader.deliveredAt(first) = deliveredWord(first, 17);
  ASSERT_EQ(board.delivered(first, &len), 1);
  EXPECT_EQ(len, 17u);
  board.release(first);
  // The same slot kAdvertSlots adverts later: the old word is not this advert's.
  std::uint64_t idx = first;
  for (std::uint32_t i = 0; i < kAdvertSlots; ++i) {
    idx = post(board, 2);
    ASSERT_NE(idx, 0u);
    EXPECT_TRUE(board.retract(idx));
    board.release(idx);
  }
  ASSERT_EQ(idx % kAdvertSlots, first % kAdvertSlots);
  idx = post(board, 3);
  ASSERT_EQ(idx % kAdvertSlots, (first + 1) % kAdvertSlots);
  *reader.deliveredAt(idx - 1) = deliveredWord(idx - 1, 5);  // the retracted one before it: not claimed
  EXPECT_EQ(board.delivered(idx - 1, &len), -1) << "a word for a retracted advert";
  Advert a;
  while (reader.oldest(&a) && a.idx != idx) reader.claim(a.idx);
  ASSERT_EQ(a.idx, idx);
  ASSERT_TRUE(reader.claim(idx));
  *reader.deliveredAt(idx) = deliveredWord(idx - kAdvertSlots, 9);
  EXPECT_EQ(board.delivered(idx, &len), 0) << "the word an earlier advert of this slot left";
  for (std::uint64_t n : {std::uint64_t{1}, std::uint64_t{4095}, kDeliveredMax}) {
    *reader.deliveredAt(idx) = deliveredWord(idx, n);
    ASSERT_EQ(board.delivered(idx, &len), 1);
    EXPECT_EQ(len, n);
  }
  EXPECT_EQ(deliveredWord(idx, kDeliveredMax + 1) >> kDeliveredLenBits, deliveredWord(idx, 0) >> kDeliveredLenBits)
      << "a length too large for the word must not spill into the index (senders never write one)";
}

// The receiver (this process) posts, keeps up to 6 adverts outstanding and retracts the oldest
// when it needs room; a forked sender claims whatever it finds. Every advert must end exactly
// once, the sender must see them in posting order, and what the receiver could not retract must
// be exactly what the sender claimed.
TEST(Advert, EachAdvertEndsOnceAgainstAnotherProcess) {
  constexpr std::uint64_t kAdverts = 20000;
  struct Shared {
    AdvertSlot slots[kAdvertSlots];
    std::atomic<std::uint32_t> ready, done;
    std::atomic<std::uint32_t> disorder;
    std::atomic<std::uint8_t> claimed[kAdverts + 1];
  };
  void* m = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(m, MAP_FAILED);
  std::memset(m, 0, sizeof(Shared));
  auto* sh = static_cast<Shared*>(m);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AdvertReader reader(sh->slots, kAdvertSlots);
    sh->ready.store(1, std::memory_order_release);
    std::uint64_t last = 0;
    while (true) {
      bool finished = sh->done.load(std::memory_order_acquire) != 0;
      Advert a;
      if (reader.oldest(&a)) {
        if (a.idx < last || a.idx > kAdverts) sh->disorder.fetch_add(1);
        last = a.idx;
        int tag = a.tag;  // read before the claim: a claim that succeeds proves it was not torn
        if (a.idx % 3 != 0 && reader.claim(a.idx)) {  // multiples of 3 are left to be retracted
          sh->claimed[a.idx].store(1);
          if (tag != static_cast<int>(a.idx % 1000)) sh->disorder.fetch_add(1);
        }
      } else if (finished) {
        _exit(0);
      }
    }
  }
  AdvertBoard board(sh->slots, kAdvertSlots);
  std::deque<std::uint64_t> outstanding;
  std::vector<std::uint8_t> retracted(kAdverts + 1, 0), lost(kAdverts + 1, 0);
  auto resolveOldest = [&] {
    std::uint64_t idx = outstanding.front();
    outstanding.pop_front();
    if (board.retract(idx)) retracted[idx] = 1;
    else lost[idx] = 1;
    board.release(idx);
  };
  while (!sh->ready.load(std::memory_order_acquire)) {
  }
  for (std::uint64_t i = 1; i <= kAdverts; ++i) {
    if (outstanding.size() == 6) resolveOldest();
    std::uint64_t idx = post(board, static_cast<int>(i % 1000));
    ASSERT_EQ(idx, i);
    outstanding.push_back(idx);
    if (i == 1)  // the sender takes the first one before the race starts (claimed > 0 below)
      while (!sh->claimed[1].load()) {
      }
    for (std::uint64_t spin = 0; spin < (i % 7) * 40; ++spin)  // give the sender varying time
      (void)sh->disorder.load(std::memory_order_relaxed);
  }
  while (!outstanding.empty()) resolveOldest();
  sh->done.store(1, std::memory_order_release);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_EQ(sh->disorder.load(), 0u) << "the sender saw adverts out of order (or torn)";
  std::uint64_t claimed = 0, retractedN = 0;
  for (std::uint64_t i = 1; i <= kAdverts; ++i) {
    bool c = sh->claimed[i].load() != 0;
    ASSERT_NE(c, retracted[i] != 0) << "advert " << i << " claimed and retracted, or neither";
    ASSERT_EQ(c, lost[i] != 0) << "advert " << i << ": the receiver's view differs from the sender's";
    claimed += c;
    retractedN += retracted[i];
  }
  EXPECT_GT(claimed, 0u);
  EXPECT_GT(retractedN, 0u);
  munmap(m, sizeof(Shared));
}
