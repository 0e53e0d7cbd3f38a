// The exportable heap's bookkeeping (mem::ChunkRanges) against a model: random takes and gives
// over chunks of two devices; after every step live ranges are aligned, inside a chunk of the
// right device and disjoint, free ranges are coalesced, and a chunk is reported empty exactly
// when its last live range went and it was never shared.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

#include "mem/chunk_ranges.hpp"

namespace cgdr::mem {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

TEST(ChunkRanges, TakesBestFitAlignedAndCoalesces) {
  ChunkRanges r;
  r.addChunk(0x10000000, 2 * kMiB, 0);
  std::uint64_t a = r.take(1, 0), b = r.take(300, 0), c = r.take(256, 0);
  EXPECT_EQ(a, 0x10000000u);
  EXPECT_EQ(b, a + 256);        // 1 byte takes one 256-byte unit
  EXPECT_EQ(c, b + 512);        // 300 bytes take two
  EXPECT_EQ(r.take(1, 1), 0u);  // no chunk on device 1
  std::uint64_t empty = 1;
  ASSERT_TRUE(r.give(b, &empty));
  EXPECT_EQ(empty, 0u);
  EXPECT_EQ(r.take(512, 0), b);  // the hole fits exactly: best fit
  ASSERT_TRUE(r.give(b, &empty));
  ASSERT_TRUE(r.give(a, &empty));
  EXPECT_EQ(r.totals().freeRanges, 2u);  // [a, c) merged, and the tail after c
  EXPECT_FALSE(r.give(a, &empty));       // twice: refused
  EXPECT_FALSE(r.give(c + 256, &empty)); // not the start of a live range
  ASSERT_TRUE(r.give(c, &empty));
  EXPECT_EQ(empty, 0x10000000u);
  EXPECT_EQ(r.totals().freeRanges, 1u);
  r.dropChunk(empty);
  EXPECT_EQ(r.totals().chunks, 0u);
  EXPECT_EQ(r.totals().freeRanges, 0u);
}

TEST(ChunkRanges, NeverMergesAcrossAdjacentChunks) {
  ChunkRanges r;
  r.addChunk(0x1000000, kMiB, 0);
  r.addChunk(0x1000000 + kMiB, kMiB, 0);  // the next chunk starts where the first ends
  std::uint64_t a = r.take(kMiB, 0), b = r.take(kMiB, 0);
  ASSERT_NE(a, 0u);
  ASSERT_NE(b, 0u);
  EXPECT_EQ(r.take(1, 0), 0u);
  std::uint64_t empty = 0;
  ASSERT_TRUE(r.give(a, &empty));
  EXPECT_EQ(empty, 0x1000000u);
  ASSERT_TRUE(r.give(b, &empty));
  EXPECT_EQ(empty, 0x1000000u + kMiB);
  EXPECT_EQ(r.totals().freeRanges, 2u);
  EXPECT_EQ(r.take(2 * kMiB, 0), 0u);  // no range spans the two chunks
}

TEST(ChunkRanges, HoldingTellsLiveFreedAndForeign) {
  ChunkRanges r;
  r.addChunk(0x20000000, 2 * kMiB, 0);
  std::uint64_t a = r.take(1000, 0), b = r.take(256, 0);
  std::uint64_t start = 0, chunk = 0;
  std::size_t size = 0;
  EXPECT_EQ(r.holding(a + 999, &start, &size, &chunk), 1);
  EXPECT_EQ(start, a);
  EXPECT_EQ(size, 1024u);  // rounded to the alignment
  // The chunk around a live range (classify takes the driver's view of it from there).
  EXPECT_EQ(chunk, 0x20000000u);
  EXPECT_EQ(r.holding(a + 1024, &start, &size), 1);  // the next range
  EXPECT_EQ(start, b);
  EXPECT_EQ(r.holding(b + 256, &start, &size), -1);  // in the chunk, never handed out
  std::uint64_t empty = 0;
  ASSERT_TRUE(r.give(a, &empty));
  EXPECT_EQ(r.holding(a, &start, &size), -1);        // handed out and given back
  EXPECT_EQ(r.holding(0x20000000 - 1, &start, &size), 0);
  EXPECT_EQ(r.holding(0x20000000 + 2 * kMiB, &start, &size), 0);
  // A range in a second chunk (another device's) names that chunk.
  r.addChunk(0x30000000, 2 * kMiB, 1);
  std::uint64_t c = r.take(300, 1);
  ASSERT_GE(c, 0x30000000u);
  EXPECT_EQ(r.holding(c + 299, &start, &size, &chunk), 1);
  EXPECT_EQ(start, c);
  EXPECT_EQ(chunk, 0x30000000u);
}

TEST(ChunkRanges, SharedChunkIsKeptAndReused) {
  ChunkRanges r;
  r.addChunk(0x2000000, 2 * kMiB, 3);
  std::uint64_t a = r.take(100, 3);
  r.markShared(a + 50);
  std::uint64_t empty = 1;
  ASSERT_TRUE(r.give(a, &empty));
  EXPECT_EQ(empty, 0u);  // a peer maps it: not reported empty
  std::size_t size = 0;
  EXPECT_EQ(r.rangeOf(a, &size), -1);
  EXPECT_EQ(r.take(2 * kMiB, 3), 0x2000000u);
  EXPECT_EQ(r.rangeOf(0x2000000, &size), 3);
  EXPECT_EQ(size, 2 * kMiB);
  EXPECT_EQ(r.totals().sharedChunks, 1u);
}

TEST(ChunkRanges, IdleChunksAreCountedUntilTakenSharedOrDropped) {
  ChunkRanges r;
  r.addChunk(0x4000000, 2 * kMiB, 0);
  r.addChunk(0x8000000, 8 * kMiB, 0);
  std::uint64_t a = r.take(3 * kMiB, 0), b = r.take(100, 0), empty = 0;
  ASSERT_EQ(a, 0x8000000u);
  r.keepIdle(0x8000000);  // not empty: nothing changes
  EXPECT_EQ(r.idleBytes(), 0u);
  ASSERT_TRUE(r.give(a, &empty));
  ASSERT_EQ(empty, 0x8000000u);
  r.keepIdle(empty);
  EXPECT_EQ(r.idleBytes(), 8 * kMiB);
  EXPECT_EQ(r.oldestIdle(), 0x8000000u);
  EXPECT_EQ(r.totals().idleChunks, 1u);
  EXPECT_EQ(r.take(5 * kMiB, 0), 0x8000000u);  // taken: no longer idle
  EXPECT_EQ(r.idleBytes(), 0u);
  ASSERT_TRUE(r.give(0x8000000, &empty));
  r.keepIdle(empty);
  r.markShared(0x8000000 + 17);  // a peer maps it: kept anyway, never trimmed
  EXPECT_EQ(r.idleBytes(), 0u);
  EXPECT_EQ(r.oldestIdle(), 0u);
  ASSERT_TRUE(r.give(b, &empty));
  r.keepIdle(empty);
  EXPECT_EQ(r.idleBytes(), 2 * kMiB);
  r.dropChunk(0x4000000);
  EXPECT_EQ(r.idleBytes(), 0u);
  EXPECT_EQ(r.totals().chunks, 1u);
  EXPECT_EQ(r.oldestIdle(), 0u);
}

TEST(ChunkRanges, OldestIdleIsTheOneKeptFirst) {
  ChunkRanges r;
  std::uint64_t bases[3] = {0x10000000, 0x20000000, 0x30000000}, p[3], empty = 0;
  for (int i = 0; i < 3; ++i) {
    r.addChunk(bases[i], 2 * kMiB, 0);
    p[i] = r.take(2 * kMiB, 0);
    ASSERT_EQ(p[i], bases[i]);
  }
  for (int i : {2, 0, 1}) {  // kept in this order
    ASSERT_TRUE(r.give(p[i], &empty));
    r.keepIdle(empty);
  }
  EXPECT_EQ(r.oldestIdle(), bases[2]);
  EXPECT_NE(r.take(100, 0), 0u);  // best fit: one of them, no longer idle
  std::uint64_t now = r.oldestIdle();
  EXPECT_TRUE(now == bases[2] || now == bases[0]);
  r.dropChunk(bases[2]);
  EXPECT_NE(r.oldestIdle(), bases[2]);
  EXPECT_NE(r.oldestIdle(), 0u);
}

TEST(ChunkRanges, RandomAgainstModel) {
  std::mt19937_64 rng(12345);
  ChunkRanges r;
  struct ChunkM {
    std::size_t size;
    int device;
    bool shared;
    bool idle = false;
    std::uint64_t since = 0;  // when it was kept idle
  };
  std::uint64_t clock = 0;
  std::map<std::uint64_t, ChunkM> chunks;
  std::map<std::uint64_t, std::pair<std::size_t, int>> live;  // start -> (rounded size, device)
  std::uint64_t next = 0x100000000;
  std::size_t outcomes[3] = {};  // holding() answered -1, 0, 1
  for (int step = 0; step < 20000; ++step) {
    int op = static_cast<int>(rng() % 10);
    int dev = static_cast<int>(rng() % 2);
    if (op < 5) {
      std::size_t n = 1 + rng() % (op == 0 ? 3 * kMiB : 70000);
      std::uint64_t p = r.take(n, dev);
      if (!p) {  // grow as the heap does, then it must fit
        std::size_t size = n <= kMiB ? 2 * kMiB : (n + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
        r.addChunk(next, size, dev);
        chunks[next] = {size, dev, false};
        next += size + (rng() % 2 ? 0 : 4 * kMiB);  // sometimes adjacent to the previous chunk
        p = r.take(n, dev);
        ASSERT_NE(p, 0u) << "fresh chunk too small for " << n;
      }
      std::size_t rounded = (n + 255) / 256 * 256;
      ASSERT_EQ(p % 256, 0u);
      auto c = chunks.upper_bound(p);
      ASSERT_NE(c, chunks.begin());
      --c;
      c->second.idle = false;  // a range of it is live again
      ASSERT_LE(p + rounded, c->first + c->second.size) << "range leaves its chunk";
      ASSERT_EQ(c->second.device, dev);
      auto after = live.lower_bound(p);
      if (after != live.end()) {
        ASSERT_LE(p + rounded, after->first) << "overlaps the next live range";
      }
      if (after != live.begin()) {
        auto before = std::prev(after);
        ASSERT_LE(before->first + before->second.first, p) << "overlaps the previous live range";
      }
      live[p] = {rounded, dev};
      if (rng() % 8 == 0) {
        r.markShared(p);
        c->second.shared = true;
        c->second.idle = false;
      }
    } else if (!live.empty()) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      std::uint64_t p = it->first;
      std::size_t size = 0;
      ASSERT_EQ(r.rangeOf(p, &size), it->second.second);
      ASSERT_EQ(size, it->second.first);
      if (size > 256) {
        ASSERT_EQ(r.rangeOf(p + 256, &size), -1) << "inside a range is not its start";
      }
      live.erase(it);
      std::uint64_t empty = 0;
      ASSERT_TRUE(r.give(p, &empty));
      auto c = std::prev(chunks.upper_bound(p));
      bool anyLive = false;
      for (auto& [s, v] : live) anyLive = anyLive || (s >= c->first && s < c->first + c->second.size);
      EXPECT_EQ(empty, (!anyLive && !c->second.shared) ? c->first : 0u);
      int fate = static_cast<int>(rng() % 3);  // drop, keep idle, or leave as a plain empty chunk
      if (empty && fate == 0) {
        r.dropChunk(empty);
        chunks.erase(c);
      } else if (empty && fate == 1) {
        r.keepIdle(empty);
        c->second.idle = true;
        c->second.since = ++clock;
      }
    }
    ChunkRanges::Totals t = r.totals();
    ASSERT_EQ(t.live, live.size());
    ASSERT_EQ(t.chunks, chunks.size());
    std::size_t liveBytes = 0;
    for (auto& [s, v] : live) liveBytes += v.first;
    ASSERT_EQ(t.liveBytes, liveBytes);
    std::size_t chunkBytes = 0;
    for (auto& [b, c] : chunks) chunkBytes += c.size;
    ASSERT_EQ(t.chunkBytes, chunkBytes);
    ASSERT_EQ(t.freeBytes + t.liveBytes, chunkBytes) << "free and live ranges do not tile the chunks";
    std::size_t idleBytes = 0, idleCount = 0;
    for (auto& [b, c] : chunks)
      if (c.idle) idleBytes += c.size, ++idleCount;
    ASSERT_EQ(t.idleBytes, idleBytes);
    ASSERT_EQ(r.idleBytes(), idleBytes);
    ASSERT_EQ(t.idleChunks, idleCount);
    std::uint64_t oldest = 0, since = 0;
    for (auto& [b, c] : chunks)
      if (c.idle && (!oldest || c.since < since)) oldest = b, since = c.since;
    ASSERT_EQ(r.oldestIdle(), oldest);
    // Where addresses lie (what classify asks of the heap): a live range's first, a middle and last
    // byte, the bytes just before and after it, and an address anywhere among the chunks.
    std::vector<std::uint64_t> probes{0x100000000 - 1, next + 4 * kMiB, 0x100000000 + rng() % (next - 0x100000000 + 1)};
    if (!live.empty()) {
      auto it = live.begin();
      std::advance(it, static_cast<long>(rng() % live.size()));
      std::uint64_t s = it->first, n = it->second.first;
      for (std::uint64_t a : {s, s + rng() % n, s + n - 1, s - 1, s + n}) probes.push_back(a);
    }
    for (std::uint64_t a : probes) {
      int want = 0;
      std::uint64_t wantStart = 0;
      std::size_t wantSize = 0;
      auto c = chunks.upper_bound(a);
      if (c != chunks.begin() && a < std::prev(c)->first + std::prev(c)->second.size) {
        want = -1;
        auto l = live.upper_bound(a);
        if (l != live.begin() && a < std::prev(l)->first + std::prev(l)->second.first) {
          want = 1;
          wantStart = std::prev(l)->first;
          wantSize = std::prev(l)->second.first;
        }
      }
      std::uint64_t start = 0, chunk = 0;
      std::size_t size = 0;
      ASSERT_EQ(r.holding(a, &start, &size, &chunk), want) << "address " << std::hex << a;
      ++outcomes[want + 1];
      if (want == 1) {
        ASSERT_EQ(start, wantStart);
        ASSERT_EQ(size, wantSize);
        ASSERT_EQ(chunk, std::prev(c)->first) << "address " << std::hex << a;
      }
    }
  }
  // Everything given back: each chunk is one free range again.
  for (auto& [p, v] : live) {
    std::uint64_t empty = 0;
    ASSERT_TRUE(r.give(p, &empty));
  }
  EXPECT_EQ(r.totals().freeRanges, chunks.size());
  for (std::size_t k : outcomes) EXPECT_GT(k, 1000u) << "holding() probes missed an outcome";
}

}  // namespace
}  // namespace cgdr::mem
