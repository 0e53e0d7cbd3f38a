// Completion of cgdr's asynchronous GPU copies as inferred from stream order (skipped without a
// GPU): a copy is reported done without asking the driver only where a later copy on its stream
// was seen done (or the whole stream was, asked once a pass found two of its copies done), a poll
// pass asks about a stream once while its oldest copy runs, and whatever is reported done has
// landed, byte for byte.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/cuda.hpp"
#include "mem/gpu_copy.hpp"

using namespace cgdr;

namespace {

class GpuCopyOrder : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!base::cuda::usable()) GTEST_SKIP() << "no usable GPU: " << base::cuda::whyUnusable();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
};

// Byte i of copy k: differs per copy and per offset.
std::uint8_t pattern(int k, std::size_t i) { return static_cast<std::uint8_t>((i * 131 + k * 29 + (i >> 9)) ^ (k << 3)); }

// k small copies of odd sizes from one device buffer into another, each with its own pattern.
struct Smalls {
  static constexpr int kCount = 16;
  std::vector<std::size_t> size, offset;
  char* src = nullptr;
  char* dst = nullptr;
  std::size_t total = 0;

  Smalls() {
    const std::size_t sizes[] = {1, 3, 255, 4096 + 5, 65536 + 13, 7, 1 << 20, 100003};
    for (int k = 0; k < kCount; ++k) {
      size.push_back(sizes[k % 8]);
      offset.push_back(total);
      total += (size.back() + 511) / 512 * 512;
    }
    EXPECT_EQ(cudaMalloc(&src, total), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&dst, total), cudaSuccess);
    EXPECT_EQ(cudaMemset(dst, 0, total), cudaSuccess);
    std::vector<std::uint8_t> h(total, 0);
    for (int k = 0; k < kCount; ++k)
      for (std::size_t i = 0; i < size[k]; ++i) h[offset[k] + i] = pattern(k, i);
    EXPECT_EQ(cudaMemcpy(src, h.data(), total, cudaMemcpyHostToDevice), cudaSuccess);
    // The memset and the pageable upload may still run on the legacy stream, which cgdr's
    // non-blocking streams do not wait for.
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~Smalls() {
    cudaFree(src);
    cudaFree(dst);
  }
  base::Status start(mem::GpuCopy& c, int k) {
    return c.start(dst + offset[k], src + offset[k], size[k], 0, mem::CopyDir::kPeer);
  }
  // Every byte of copy k has landed (read on the legacy stream, which does not wait for cgdr's).
  void expectLanded(int k) {
    std::vector<std::uint8_t> h(size[k]);
    ASSERT_EQ(cudaMemcpy(h.data(), dst + offset[k], size[k], cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < size[k]; ++i)
      if (h[i] != pattern(k, i)) FAIL() << "copy " << k << " byte " << i << " of " << size[k] << " not landed";
  }
};

}  // namespace

TEST_F(GpuCopyOrder, LaterCopySeenDoneAnswersForEarlierOnes) {
  Smalls s;
  std::vector<mem::GpuCopy> c(Smalls::kCount);
  for (int k = 0; k < Smalls::kCount; ++k) ASSERT_TRUE(s.start(c[k], k).isOk());
  while (!c.back().done()) {
  }
  mem::CopyCounts before = mem::copyCounts();
  for (int k = 0; k + 1 < Smalls::kCount; ++k) {
    EXPECT_TRUE(c[k].pending());
    EXPECT_TRUE(c[k].done()) << "copy " << k;
    EXPECT_FALSE(c[k].pending()) << "copy " << k << " kept its event";
    EXPECT_TRUE(c[k].error().isOk());
  }
  mem::CopyCounts after = mem::copyCounts();
  EXPECT_EQ(after.asked - before.asked, 0u) << "the driver was asked although a later copy was seen done; inferred "
                                            << after.inferred - before.inferred;
  EXPECT_EQ(after.inferred - before.inferred, static_cast<unsigned long long>(Smalls::kCount - 1));
  for (int k = 0; k < Smalls::kCount; ++k) s.expectLanded(k);
}

TEST_F(GpuCopyOrder, IdleStreamAnswersForLaterCopies) {
  Smalls s;
  std::vector<mem::GpuCopy> c(Smalls::kCount);
  for (int k = 0; k < Smalls::kCount; ++k) ASSERT_TRUE(s.start(c[k], k).isOk());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // every copy has finished
  mem::CopyCounts before = mem::copyCounts();
  mem::PollPass pass;
  for (int k = 0; k < Smalls::kCount; ++k) EXPECT_TRUE(c[k].done(&pass)) << "copy " << k;
  mem::CopyCounts after = mem::copyCounts();
  // The first two ask their events, the second then the stream once; the rest follow from that.
  EXPECT_EQ(after.asked - before.asked, 3u) << "inferred " << after.inferred - before.inferred;
  EXPECT_EQ(after.inferred - before.inferred, static_cast<unsigned long long>(Smalls::kCount - 2))
      << "asked " << after.asked - before.asked;
  for (int k = 0; k < Smalls::kCount; ++k) s.expectLanded(k);
}

TEST_F(GpuCopyOrder, PassAsksOncePerStreamAndDoneMeansLanded) {
  // A long copy first, then the small ones behind it on the same stream.
  const std::size_t big = std::size_t{512} << 20;
  char *bsrc = nullptr, *bdst = nullptr;
  ASSERT_EQ(cudaMalloc(&bsrc, big), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&bdst, big), cudaSuccess);
  std::vector<std::uint8_t> h(big);
  for (std::size_t i = 0; i < big; ++i) h[i] = pattern(99, i);
  ASSERT_EQ(cudaMemcpy(bsrc, h.data(), big, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(bdst, 0, big), cudaSuccess);
  Smalls s;  // (synchronizes the device: the uploads above have landed)
  std::vector<mem::GpuCopy> c(Smalls::kCount + 1);
  ASSERT_TRUE(c[0].start(bdst, bsrc, big, 0, mem::CopyDir::kPeer).isOk());
  for (int k = 0; k < Smalls::kCount; ++k) ASSERT_TRUE(s.start(c[k + 1], k).isOk());

  mem::CopyCounts before = mem::copyCounts();
  mem::PollPass first;
  bool bigDone = c[0].done(&first);
  if (!bigDone) {  // the usual case: 512 MiB take far longer than issuing 16 copies
    for (std::size_t k = 1; k < c.size(); ++k) EXPECT_FALSE(c[k].done(&first)) << "copy " << k;
    mem::CopyCounts after = mem::copyCounts();
    EXPECT_EQ(after.asked - before.asked, 1u) << "one question per stream and pass; inferred "
                                              << after.inferred - before.inferred;
    EXPECT_EQ(after.inferred - before.inferred, static_cast<unsigned long long>(Smalls::kCount));
  } else {
    GTEST_LOG_(INFO) << "the long copy finished before the first poll: the pass had nothing to skip";
  }
  // Poll newest first with a fresh pass each round until all are done; whatever is reported done
  // must have landed, and with it everything before it on the stream.
  std::vector<bool> seen(c.size(), false);
  seen[0] = bigDone;
  for (bool all = false; !all;) {
    mem::PollPass pass;
    all = true;
    for (std::size_t k = c.size(); k-- > 0;) {
      if (seen[k]) continue;
      if (!c[k].done(&pass)) {
        all = false;
        continue;
      }
      seen[k] = true;
      for (std::size_t j = 1; j <= k; ++j) s.expectLanded(static_cast<int>(j - 1));
      std::vector<std::uint8_t> back(big);
      ASSERT_EQ(cudaMemcpy(back.data(), bdst, big, cudaMemcpyDeviceToHost), cudaSuccess);
      ASSERT_EQ(std::memcmp(back.data(), h.data(), big), 0) << "copy " << k << " reported done before the long copy landed";
      break;  // one full check per newly finished copy keeps this quick
    }
  }
  for (auto& x : c) EXPECT_TRUE(x.error().isOk());
  cudaFree(bsrc);
  cudaFree(bdst);
}

// Copies through the copy graphs (Issue::kGraph), the same `count` copies of distinct regions in
// several rounds with new bytes each round: every byte lands each round, no copy falls back to a
// plain one, and - where the copies fit in the graphs kept per stream (CGDR_CUDA_COPY_GRAPHS,
// 128) - every copy of a later round launches its graph unchanged. Where they do not, some still do (a graph to re-point
// is taken at random, so a cycle of more copies than graphs is not evicted in its own order).
// The graphs' memory on the GPU is printed.
void graphRounds(int count, bool fits, mem::CopyDir dir) {
  const std::size_t sizes[] = {1, 3, 255, 4096 + 5, 65536 + 13, 7, 100003, 9};
  std::vector<std::size_t> size, offset;
  std::size_t total = 0;
  for (int k = 0; k < count; ++k) {
    size.push_back(sizes[k % 8]);
    offset.push_back(total);
    total += (size.back() + 255) / 256 * 256;
  }
  char *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, total), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, total), cudaSuccess);
  const mem::CopyIds ids{mem::copyId(1, reinterpret_cast<std::uintptr_t>(dst)),
                         mem::copyId(2, reinterpret_cast<std::uintptr_t>(src))};
  std::vector<std::uint8_t> h(total), back(total);
  for (int round = 0; round < 3; ++round) {
    for (int k = 0; k < count; ++k)
      for (std::size_t i = 0; i < size[k]; ++i) h[offset[k] + i] = pattern(k + 1000 * round, i);
    ASSERT_EQ(cudaMemcpy(src, h.data(), total, cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(dst, 0, total), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    mem::CopyCounts before = mem::copyCounts();
    std::size_t freeBefore = 0, freeAfter = 0, gpuTotal = 0;
    ASSERT_EQ(cudaMemGetInfo(&freeBefore, &gpuTotal), cudaSuccess);
    std::vector<mem::GpuCopy> c(count);
    for (int k = 0; k < count; ++k)
      ASSERT_TRUE(c[k].start(dst + offset[k], src + offset[k], size[k], 0, dir, mem::Issue::kGraph, ids)
                      .isOk());
    for (auto& x : c) ASSERT_TRUE(x.wait().isOk());
    mem::CopyCounts after = mem::copyCounts();
    ASSERT_EQ(cudaMemGetInfo(&freeAfter, &gpuTotal), cudaSuccess);
    if (round == 0)
      std::printf("%d copies, round 0: %llu new graphs or re-pointed, GPU memory free %+lld KiB\n", count,
                  after.graph - before.graph,
                  (static_cast<long long>(freeAfter) - static_cast<long long>(freeBefore)) / 1024);
    EXPECT_EQ(after.plain - before.plain, 0u) << "round " << round << ": copies the graphs did not take";
    EXPECT_EQ(after.graph - before.graph, static_cast<unsigned long long>(count)) << "round " << round;
    unsigned long long repeated = after.repeated - before.repeated;
    if (round > 0 && fits) {
      EXPECT_EQ(repeated, static_cast<unsigned long long>(count)) << "round " << round << ": graphs re-pointed";
    }
    if (round > 0 && !fits) {
      EXPECT_GT(repeated, 0u) << "round " << round << ": every graph re-pointed";
    }
    if (round > 0) std::printf("%d copies, round %d: %llu graphs launched unchanged\n", count, round, repeated);
    ASSERT_EQ(cudaMemcpy(back.data(), dst, total, cudaMemcpyDeviceToHost), cudaSuccess);
    for (int k = 0; k < count; ++k)
      for (std::size_t i = 0; i < size[k]; ++i)
        if (back[offset[k] + i] != pattern(k + 1000 * round, i))
          FAIL() << "round " << round << " copy " << k << " byte " << i << " of " << size[k] << " wrong";
  }
  cudaFree(src);
  cudaFree(dst);
}

// (Each on a stream of its own: the graphs are kept per stream for the process's life.)
TEST_F(GpuCopyOrder, GraphCopiesRepeatedWhereTheyFit) { graphRounds(100, true, mem::CopyDir::kStage); }
TEST_F(GpuCopyOrder, GraphCopiesBeyondTheGraphsKeptStillLand) { graphRounds(300, false, mem::CopyDir::kPeer); }

// Copies issued over the peer lanes (Issue::kGraphLanes, used where the other side is on a GPU the
// process cannot see): consecutive copies of at least CGDR_CUDA_PEER_LANES_MIN bytes go to distinct
// streams in turn, a long copy on one lane is never reported done because a later copy on another
// lane was (stream order answers only within a stream), and whatever is reported done has landed,
// byte for byte. Smaller ones, and kGraph copies, stay on the one peer stream.
TEST_F(GpuCopyOrder, PeerLanesSpreadCopiesAndDoneMeansLanded) {
  const int lanes = mem::peerLanes();
  const std::size_t min = std::max<std::size_t>(mem::peerLanesMin(), 1);
  std::printf("peer lanes: %d, from %zu bytes\n", lanes, min);
  // (One lane would leave the spreading below unchecked: the default must spread.)
  if (!std::getenv("CGDR_CUDA_PEER_LANES")) {
    ASSERT_EQ(lanes, 4) << "CGDR_CUDA_PEER_LANES' default";
  }
  const std::size_t big = std::size_t{512} << 20;
  constexpr int kCopies = 10;
  std::vector<std::size_t> size{big}, offset{0};
  std::size_t total = (big + 4095) / 4096 * 4096;
  for (int k = 1; k <= kCopies; ++k) {  // odd sizes from the threshold up, at odd offsets
    size.push_back(min + static_cast<std::size_t>(k - 1) * 4097 + (k & 1));
    offset.push_back(total + static_cast<std::size_t>(k) * 3);
    total = (offset.back() + size.back() + 4095) / 4096 * 4096;
  }
  char *src = nullptr, *dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, total), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, total), cudaSuccess);
  std::vector<std::uint8_t> h(total, 0), back;
  for (int k = 0; k <= kCopies; ++k)
    for (std::size_t i = 0; i < size[k]; ++i) h[offset[k] + i] = pattern(70 + k, i);
  ASSERT_EQ(cudaMemcpy(src, h.data(), total, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(dst, 0, total), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto landed = [&](int k) {
    back.resize(size[k]);
    ASSERT_EQ(cudaMemcpy(back.data(), dst + offset[k], size[k], cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(std::memcmp(back.data(), h.data() + offset[k], size[k]), 0) << "copy " << k << " reported done before it landed";
  };
  const mem::CopyIds none{};
  std::vector<mem::GpuCopy> c(kCopies + 1);
  for (int k = 0; k <= kCopies; ++k)
    ASSERT_TRUE(c[k].start(dst + offset[k], src + offset[k], size[k], 0, mem::CopyDir::kPeer, mem::Issue::kGraphLanes,
                           none)
                    .isOk());
  // In turn: each run of `lanes` consecutive copies covers `lanes` distinct streams, and copy k
  // shares its stream with copy k + lanes.
  for (int k = 0; k + lanes <= kCopies; ++k) {
    EXPECT_EQ(c[k].stream(), c[k + lanes].stream()) << "copy " << k;
    for (int j = 1; j < lanes; ++j) EXPECT_NE(c[k].stream(), c[k + j].stream()) << "copies " << k << ", " << k + j;
  }
  // The long copy's lane mates stand behind it; the others' copies may finish first. Poll newest
  // first until all are done: done means landed.
  std::vector<bool> seen(c.size(), false);
  int beforeLong = 0;  // copies on other lanes seen done while the long one ran
  for (bool all = false; !all;) {
    mem::PollPass pass;
    all = true;
    for (int k = kCopies; k >= 0; --k) {
      if (seen[k]) continue;
      if (!c[k].done(&pass)) {
        all = false;
        continue;
      }
      seen[k] = true;
      ASSERT_TRUE(c[k].error().isOk()) << "copy " << k;
      landed(k);
      if (k > 0 && !seen[0]) ++beforeLong;
    }
  }
  std::printf("copies on other lanes done while the long one ran: %d\n", beforeLong);
  // Below the threshold (kGraphLanes) and kGraph copies of any size: the one peer stream.
  std::vector<mem::GpuCopy> g(4);
  for (int k = 0; k < 4; ++k) {
    const bool below = k < 2 && min > 2;  // (a threshold of 1 or 2 bytes leaves no copy below it)
    std::size_t n = below ? min - 1 - static_cast<std::size_t>(k) : size[k + 1];  // (within region k + 1)
    ASSERT_TRUE(g[k].start(dst + offset[k + 1], src + offset[k + 1], n, 0, mem::CopyDir::kPeer,
                           below ? mem::Issue::kGraphLanes : mem::Issue::kGraph, none)
                    .isOk());
  }
  for (int k = 1; k < 4; ++k) EXPECT_EQ(g[k].stream(), g[0].stream()) << "copy " << k << " left the peer stream";
  for (auto& x : g) ASSERT_TRUE(x.wait().isOk());
  cudaFree(src);
  cudaFree(dst);
}
