// The resident copy kernel (mem/resident.hpp) driven directly on GPU 0, both sides of each copy on
// that GPU (skipped without a GPU). Run with CGDR_CUDA_RESIDENT=always and a short
// CGDR_CUDA_RESIDENT_IDLE (tests/gpu/CMakeLists.txt), so that the kernel leaves and starts again
// many times while copies come, some of them posted as it leaves: those are made on the copy
// engine after it left (the redo path). Every byte of every copy is checked, against the copies
// applied in order on the host, and every copy's flag (a word of mapped host memory it sets when
// done: set by the time the copy reads done, its bytes in place once it is seen set, and never
// set where the copy was not posted or failed); a kernel that faults fails its copies with a
// message instead of leaving them pending. With CGDR_CUDA_RESIDENT_BLOCKS > 1 and a larger
// CGDR_CUDA_RESIDENT_LIMIT (gpu.resident_crew) messages up to that limit come too, and copies
// larger than 16 KiB must have been shared with the kernel's helpers.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "mem/resident.hpp"

using namespace cgdr;
using Clock = std::chrono::steady_clock;

namespace {

// CGDR_CUDA_RESIDENT_LIMIT as this process was given it (16K unless set), and whether the kernel
// has helpers (CGDR_CUDA_RESIDENT_BLOCKS > 1).
std::size_t limit() {
  const char* v = std::getenv("CGDR_CUDA_RESIDENT_LIMIT");
  return v ? base::parseBytes(v).value_or(0) : 16384;
}
bool crewed() {
  const char* v = std::getenv("CGDR_CUDA_RESIDENT_BLOCKS");
  return v && std::atoi(v) > 1;
}

class Resident : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!base::cuda::usable()) GTEST_SKIP() << "no usable GPU: " << base::cuda::whyUnusable();
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    const char* mode = std::getenv("CGDR_CUDA_RESIDENT");
    ASSERT_TRUE(mode && std::string(mode) == "always") << "run with CGDR_CUDA_RESIDENT=always";
    ASSERT_GE(limit(), 16384u);
    ASSERT_TRUE(mem::residentFits(1) && mem::residentFits(limit()) && !mem::residentFits(limit() + 1) &&
                !mem::residentFits(0));
  }
};

// Byte i of source message k: differs per message and per offset.
std::uint8_t pattern(int k, std::size_t i) {
  return static_cast<std::uint8_t>((i * 167 + k * 59 + (i >> 8) * 13) ^ (k >> 4) ^ 0x5a);
}

// Waits (polling) until copy `seq` of GPU 0 is done; false where it failed (*err says why) or
// 20 s passed.
bool waitDone(std::uint64_t seq, base::Status* err) {
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (Clock::now() < end) {
    int r = mem::residentPoll(0, seq, err);
    if (r == 1) return true;
    if (r < 0) return false;
  }
  *err = base::Status(base::Errc::kCuda, "timed out after 20 s");
  return false;
}

void spinNs(std::uint64_t ns) {
  const auto end = Clock::now() + std::chrono::nanoseconds(ns);
  while (Clock::now() < end) {
  }
}

std::size_t slotBytes() { return limit() + 64; }  // one target's room in dst
constexpr int kMessages = 3000;
constexpr int kTargets = 37;  // messages k and k + 37 write the same target: order shows
constexpr int kFlagCheckEvery = 50;  // every 50th message taken: its bytes read back once its flag is seen
constexpr int kCount = 1000;         // copies a ping-pong batch (pingPongBatch)
constexpr std::size_t kSlot = 4160;  // room a copy of such a batch has in src and dst

std::uint64_t flagValue(int k) { return 0x9E3779B97F4A7C15ull * static_cast<std::uint64_t>(k + 1) | 1; }

// Flags in mapped host memory, one per message.
struct Flags {
  std::uint64_t* host = nullptr;
  std::uint64_t dev = 0;
  explicit Flags(int n) {
    void* h = nullptr;
    void* d = nullptr;
    EXPECT_EQ(cudaHostAlloc(&h, n * sizeof(std::uint64_t), cudaHostAllocMapped | cudaHostAllocPortable), cudaSuccess);
    EXPECT_EQ(cudaHostGetDevicePointer(&d, h, 0), cudaSuccess);
    host = static_cast<std::uint64_t*>(h);
    dev = reinterpret_cast<std::uint64_t>(d);
    for (int k = 0; k < n; ++k) host[k] = 0;
  }
  ~Flags() { cudaFreeHost(host); }
  mem::DoneFlag of(int k) const { return {host + k, dev + k * sizeof(std::uint64_t), flagValue(k)}; }
  std::uint64_t read(int k) const { return __atomic_load_n(host + k, __ATOMIC_ACQUIRE); }
};

// Messages of odd and edge sizes at odd offsets, from distinct sources into a few targets they
// overwrite in turn. A message the kernel does not take (not running, starting, or full) is made
// with cudaMemcpy after every earlier one is done, as the caller of residentPost does.
struct Round {
  std::vector<std::uint8_t> want;  // dst as the messages applied in order leave it
  char* src = nullptr;
  char* dst = nullptr;
  Flags flags{kMessages};
  std::vector<char> taken = std::vector<char>(kMessages, 0);  // posted to the kernel
  int flagChecks = 0;

  std::vector<std::size_t> sizes = {1, 3, 8, 255, 256, 4095, 4096, 777, 2, 16383, 64, 1000, 8193, 16384};
  std::vector<std::size_t> from;  // message k's offset in src
  const std::size_t slot = slotBytes();

  std::size_t size(int k) const { return sizes[k % sizes.size()]; }
  std::size_t srcOffset(int k) const { return from[k]; }
  std::size_t dstOffset(int k) const { return (k % kTargets) * slot + (k / kTargets) % 5; }

  Round() : want(kTargets * slotBytes(), 0) {
    if (limit() > 16384)  // the helpers' sizes: one over 16 KiB, odd ones between, the limit and one under
      for (std::size_t n :
           {std::size_t{16385}, (16384 + limit()) / 2 + 5, limit() - 1, limit(), std::size_t{16384 + 4097}})
        sizes.push_back(n);
    std::size_t at = 0;
    for (int k = 0; k < kMessages; ++k) {
      from.push_back(at + k % 7);
      at += size(k) + 16;
    }
    std::vector<std::uint8_t> h(at, 0);
    for (int k = 0; k < kMessages; ++k)
      for (std::size_t i = 0; i < size(k); ++i) h[srcOffset(k) + i] = pattern(k, i);
    EXPECT_EQ(cudaMalloc(&src, h.size()), cudaSuccess);
    EXPECT_EQ(cudaMalloc(&dst, want.size()), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(src, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
    EXPECT_EQ(cudaMemset(dst, 0, want.size()), cudaSuccess);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  ~Round() {
    mem::residentQuiesce();
    cudaFree(src);
    cudaFree(dst);
  }

  // Sends every message with gaps of 0-4 us (the kernel's idle time is 2 us), then checks every
  // byte of dst. (What dst must hold is known beforehand: filling it in between the messages made
  // the gaps as long as the CPU's copying, under AddressSanitizer longer than the idle time.)
  void run(unsigned seed) {
    std::uint64_t last = 0;
    int lastK = -1;
    base::Status err;
    for (int k = 0; k < kMessages; ++k)
      for (std::size_t i = 0; i < size(k); ++i) want[dstOffset(k) + i] = pattern(k, i);
    for (int k = 0; k < kMessages; ++k) {
      char* d = dst + dstOffset(k);
      const char* s = src + srcOffset(k);
      const mem::DoneFlag f = flags.of(k);
      std::uint64_t seq = mem::residentPost(0, d, s, size(k), &f);
      if (seq) {
        last = seq;
        lastK = k;
        taken[k] = 1;
        if (k % kFlagCheckEvery == 0) {  // the flag seen set: the bytes are there
          const auto end = Clock::now() + std::chrono::seconds(20);
          while (flags.read(k) != flagValue(k) && Clock::now() < end) ASSERT_GE(mem::residentPoll(0, seq, &err), 0) << err.message();
          ASSERT_EQ(flags.read(k), flagValue(k)) << "message " << k << ": flag not set in 20 s";
          std::vector<std::uint8_t> got(size(k));
          ASSERT_EQ(cudaMemcpy(got.data(), d, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
          for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(got[i], pattern(k, i)) << "message " << k << " byte " << i << " once its flag was set";
          ++flagChecks;
        }
      } else {
        if (last) {
          ASSERT_TRUE(waitDone(last, &err)) << "message " << k << ": " << err.message();
          ASSERT_EQ(flags.read(lastK), flagValue(lastK)) << "message " << lastK << " done, its flag not set";
        }
        ASSERT_EQ(cudaMemcpy(d, s, size(k), cudaMemcpyDeviceToDevice), cudaSuccess);
        // (a device-to-device cudaMemcpy may return before it is done: a later message to the same
        // target must not overtake it)
        ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
        mem::residentWake(0);
      }
      seed = seed * 1103515245u + 12345u;
      spinNs((seed >> 8) % 4000);
      if (k % 16 == 15 && last) {  // sometimes a poll between messages (as an engine's pass does)
        int r = mem::residentPoll(0, last, &err);
        ASSERT_GE(r, 0) << err.message();
      }
    }
    if (last) {
      ASSERT_TRUE(waitDone(last, &err)) << err.message();
    }
    for (int k = 0; k < kMessages; ++k)
      ASSERT_EQ(flags.read(k), taken[k] ? flagValue(k) : 0) << "message " << k << (taken[k] ? " taken" : " not taken");
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<std::uint8_t> got(want.size());
    ASSERT_EQ(cudaMemcpy(got.data(), dst, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], want[i]) << "target " << i / slot << " byte " << i % slot;
  }
};

// One batch of 1000 ping-pong copies (each done before the next is posted, as a ping-pong's
// sender does; one not taken goes to the copy engine) of 1-4111 bytes at odd offsets into
// distinct targets, every byte of the targets checked; false on a failure (reported).
bool pingPongBatch(char* src, char* dst, unsigned batch) {
  auto size = [batch](int k) { return 1 + (static_cast<std::size_t>(k) * 577 + batch * 31) % 4111; };
  std::vector<std::uint8_t> h(kCount * kSlot, 0);
  for (int k = 0; k < kCount; ++k)
    for (std::size_t i = 0; i < size(k); ++i)
      h[k * kSlot + k % 7 + i] = pattern(static_cast<int>(batch * kCount) + k, i);
  EXPECT_EQ(cudaMemcpy(src, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMemset(dst, 0xee, h.size()), cudaSuccess);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  base::Status err;
  for (int k = 0; k < kCount; ++k) {
    const std::size_t at = k * kSlot + k % 7;  // (the source's offset; the target's is 3 more)
    if (std::uint64_t seq = mem::residentPost(0, dst + at + 3, src + at, size(k))) {
      EXPECT_TRUE(waitDone(seq, &err)) << "batch " << batch << " copy " << k << ": " << err.message();
      if (!err.isOk()) return false;
    } else {
      EXPECT_EQ(cudaMemcpy(dst + at + 3, src + at, size(k), cudaMemcpyDeviceToDevice), cudaSuccess);
      EXPECT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
      mem::residentWake(0);
    }
  }
  std::vector<std::uint8_t> got(h.size());
  EXPECT_EQ(cudaMemcpy(got.data(), dst, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int k = 0; k < kCount; ++k)
    for (std::size_t i = 0; i < kSlot; ++i) {
      const std::size_t at = k * kSlot + k % 7 + 3;
      const std::uint8_t want = k * kSlot + i >= at && k * kSlot + i < at + size(k) ? h[k * kSlot + i - 3] : 0xee;
      if (got[k * kSlot + i] != want) {
        ADD_FAILURE() << "batch " << batch << " copy " << k << ": byte " << i << " of its target is "
                      << int(got[k * kSlot + i]) << ", not " << int(want);
        return false;
      }
    }
  return true;
}

}  // namespace

// Rounds of messages until one of them was posted to a kernel that left without taking it (the
// copy then made on the copy engine), each round byte-exact.
TEST_F(Resident, CopiesLandInOrderAlsoWhenRedoneAfterTheKernelLeft) {
  const mem::ResidentCounts before = mem::residentCounts();
  const auto end = Clock::now() + std::chrono::seconds(30);
  int rounds = 0, flagChecks = 0;
  do {
    Round r;
    r.run(1234u + rounds);
    if (HasFatalFailure()) return;
    ++rounds;
    flagChecks += r.flagChecks;
  } while (mem::residentCounts().redone == before.redone && Clock::now() < end);
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("%d rounds of %d messages: %llu by the kernel in %llu launches, %llu redone after it left, "
              "%llu while it did not run, %llu while full\n",
              rounds, kMessages, after.copies - before.copies, after.launches - before.launches,
              after.redone - before.redone, after.notRunning - before.notRunning, after.full - before.full);
  EXPECT_GT(after.copies - before.copies, static_cast<unsigned long long>(kMessages / 4));
  EXPECT_GE(after.launches - before.launches, 10ull) << "a 2 us idle time makes it leave often";
  EXPECT_GT(after.redone, before.redone) << "no message was left by a kernel leaving in 30 s";
  EXPECT_FALSE(mem::residentBusy(0));
  EXPECT_GT(flagChecks, 0) << "no message's bytes were read back after its flag";
  if (crewed()) {  // (a kernel that leaves 2 us after each copy seldom has helpers that joined: the bursts do)
    std::printf("%llu batches shared with the kernel's helpers\n", after.crewed - before.crewed);
  } else {
    EXPECT_EQ(after.crewed, before.crewed) << "a kernel of one block shared a batch";
  }
}

// Bursts of 64 messages larger than 16 KiB posted back to back (the second of each waiting for the
// start of the kernel the first started: CGDR_CUDA_RESIDENT_START_WAIT), so that the kernel takes
// several in one batch: into 64 distinct targets (such a batch may be shared with the helpers), then into
// 32 targets each written by two messages of the burst at different offsets (the later one must
// win byte for byte: such a batch is copied in order by one block).
TEST_F(Resident, BurstsOfLargeMessagesLandInOrder) {
  if (limit() <= 16384) GTEST_SKIP() << "messages over 16 KiB: with CGDR_CUDA_RESIDENT_LIMIT above 16K";
  const mem::ResidentCounts before = mem::residentCounts();
  constexpr int kBurst = 64;
  const std::size_t slot = slotBytes();
  auto size = [](int b, int m) { return 16385 + static_cast<std::size_t>((b * 131 + m * 977) % (limit() - 16384)); };
  char* src = nullptr;
  char* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, kBurst * slot), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, kBurst * slot), cudaSuccess);
  std::vector<std::uint8_t> want(kBurst * slot, 0), h(kBurst * slot);
  ASSERT_EQ(cudaMemset(dst, 0, want.size()), cudaSuccess);
  base::Status err;
  int bursts = 0;
  for (int b = 0; b < 40; ++b, ++bursts) {
    const bool overlapping = b % 2 == 1;
    for (int m = 0; m < kBurst; ++m)  // message m of burst b: its own pattern
      for (std::size_t i = 0; i < size(b, m); ++i) h[m * slot + i] = pattern(b * kBurst + m, i);
    ASSERT_EQ(cudaMemcpy(src, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
    auto at = [&](int m) { return overlapping ? (m % 32) * slot + (m / 32) * 3 : m * slot + m % 5; };
    // (what dst must hold, filled in before the burst: between its messages, the CPU's copying
    // made gaps longer than the kernel's idle time under AddressSanitizer)
    for (int m = 0; m < kBurst; ++m)
      for (std::size_t i = 0; i < size(b, m); ++i) want[at(m) + i] = h[m * slot + i];
    std::uint64_t last = 0;
    for (int m = 0; m < kBurst; ++m) {
      const std::size_t n = size(b, m);
      std::uint64_t seq = mem::residentPost(0, dst + at(m), src + m * slot, n);
      if (seq) {
        last = seq;
      } else {  // as a caller does: the copy engine, after every earlier copy
        if (last) {
          ASSERT_TRUE(waitDone(last, &err)) << "burst " << b << " message " << m << ": " << err.message();
        }
        ASSERT_EQ(cudaMemcpy(dst + at(m), src + m * slot, n, cudaMemcpyDeviceToDevice), cudaSuccess);
        ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
        mem::residentWake(0);
      }
    }
    if (last) {
      ASSERT_TRUE(waitDone(last, &err)) << "burst " << b << ": " << err.message();
    }
    std::vector<std::uint8_t> got(want.size());
    ASSERT_EQ(cudaMemcpy(got.data(), dst, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    if (got != want) {  // (every byte; the first that differs named)
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << "burst " << b << (overlapping ? " (overlapping)" : "") << ": target "
                                   << i / slot << " byte " << i % slot;
    }
  }
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("%d bursts of %d: %llu by the kernel, %llu batches shared with its helpers, %llu while full\n", bursts,
              kBurst, after.copies - before.copies, after.crewed - before.crewed, after.full - before.full);
  EXPECT_GT(after.copies - before.copies, static_cast<unsigned long long>(bursts * kBurst / 4));
  if (crewed()) {
    EXPECT_GT(after.crewed, before.crewed);
  }
  cudaFree(src);
  cudaFree(dst);
}

// After a lull (the kernel left), a copy goes to the copy engine and starts the kernel; the next,
// posted at once, finds it launched but not started yet and waits for its start, and the kernel
// takes it (CGDR_CUDA_RESIDENT_START_WAIT; with 0, gpu.resident_start_wait_off, it goes to the copy
// engine instead and nothing waits). Both copies' targets are checked byte for byte each round.
TEST_F(Resident, CopiesWhileLaunchingWaitForItsStart) {
  const char* w = std::getenv("CGDR_CUDA_RESIDENT_START_WAIT");
  const bool waits = !w || std::atof(w) > 0;
  constexpr int kRounds = 200;
  const std::size_t slot = slotBytes();
  char* src = nullptr;
  char* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 2 * slot), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, 2 * slot), cudaSuccess);
  std::vector<std::uint8_t> h(2 * slot), got(2 * slot);
  const mem::ResidentCounts before = mem::residentCounts();
  int taken = 0, refused = 0, firstTaken = 0;
  base::Status err;
  for (int r = 0; r < kRounds; ++r) {
    auto size = [r](int m) { return 1 + static_cast<std::size_t>(r * 997 + m * 4099) % limit(); };
    for (int m = 0; m < 2; ++m)
      for (std::size_t i = 0; i < slot; ++i) h[m * slot + i] = i < size(m) ? pattern(2 * r + m, i) : 0xee;
    ASSERT_EQ(cudaMemcpy(src, h.data(), h.size(), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(cudaMemset(dst, 0xee, h.size()), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    mem::residentLeave();
    spinNs(1'000'000);  // the lull: the kernel has left
    if (std::uint64_t seq = mem::residentPost(0, dst, src, size(0))) {  // (a kernel still there)
      ++firstTaken;
      ASSERT_TRUE(waitDone(seq, &err)) << "round " << r << ": " << err.message();
    } else {
      ASSERT_EQ(cudaMemcpy(dst, src, size(0), cudaMemcpyDeviceToDevice), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
      mem::residentWake(0);
    }
    if (std::uint64_t seq = mem::residentPost(0, dst + slot, src + slot, size(1))) {
      ++taken;
      ASSERT_TRUE(waitDone(seq, &err)) << "round " << r << ": " << err.message();
    } else {
      ++refused;
      ASSERT_EQ(cudaMemcpy(dst + slot, src + slot, size(1), cudaMemcpyDeviceToDevice), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(cudaStreamLegacy), cudaSuccess);
    }
    ASSERT_EQ(cudaMemcpy(got.data(), dst, got.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    if (got != h) {  // (every byte; the first that differs named)
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_EQ(got[i], h[i]) << "round " << r << " copy " << i / slot << " byte " << i % slot;
    }
  }
  const mem::ResidentCounts after = mem::residentCounts();
  const unsigned long long waited = after.waited - before.waited;
  std::printf("%d rounds: the copy after the lull's first taken %d times, %d refused; %llu waited for the start, "
              "%.2f us on average; %llu launches (first copies taken by a kernel still there: %d)\n",
              kRounds, taken, refused, waited,
              waited ? static_cast<double>(after.waitedNs - before.waitedNs) / 1e3 / waited : 0.0,
              after.launches - before.launches, firstTaken);
  EXPECT_LE(firstTaken, kRounds / 10) << "the kernel did not leave in the 1 ms lulls";
  if (waits) {
    EXPECT_GT(waited, 0ull) << "no copy came while the kernel was launched and not started";
    // (under AddressSanitizer the post may come after the start, and the kernel leaves 2 us later)
    EXPECT_GE(taken, kRounds / 2);
  } else {
    EXPECT_EQ(waited, 0ull) << "a copy waited with CGDR_CUDA_RESIDENT_START_WAIT=0";
    EXPECT_GT(refused, 0) << "no copy came while the kernel was launched and not started";
  }
  cudaFree(src);
  cudaFree(dst);
}

// Messages back to back, each done before the next is posted: the kernel keeps running and takes
// nearly all.
TEST_F(Resident, BackToBackMessagesStayOnTheKernel) {
  const mem::ResidentCounts before = mem::residentCounts();
  char* src = nullptr;
  char* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, kCount * kSlot), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, kCount * kSlot), cudaSuccess);
  for (unsigned batch = 0; batch < 2; ++batch) ASSERT_TRUE(pingPongBatch(src, dst, batch));
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("%d messages: %llu by the kernel in %llu launches\n", 2 * kCount, after.copies - before.copies,
              after.launches - before.launches);
  EXPECT_GT(after.copies - before.copies, static_cast<unsigned long long>(2 * kCount * 9 / 10));
  cudaFree(src);
  cudaFree(dst);
}

// A copy to an address that is not mapped on the GPU: the kernel faults, and the poll reports the
// copy failed, naming the resident kernel and the CUDA error, within its 1 ms stream check (not
// pending forever). The GPU's context is unusable afterwards: this test runs in its own process.
TEST_F(Resident, FaultFailsTheCopyWithAMessage) {
  if (!std::getenv("CGDR_TEST_RESIDENT_FAULT")) GTEST_SKIP() << "runs alone (gpu.resident_fault)";
  char* src = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 64), cudaSuccess);
  ASSERT_EQ(cudaMemset(src, 1, 64), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::uint64_t seq = 0;
  Flags flags(1);
  const mem::DoneFlag f = flags.of(0);
  const auto end = Clock::now() + std::chrono::seconds(20);
  while (!seq && Clock::now() < end) {
    seq = mem::residentPost(0, reinterpret_cast<void*>(std::uintptr_t{0x1000}), src, 64, &f);
    if (!seq) mem::residentWake(0);
  }
  ASSERT_NE(seq, 0u) << "the kernel never ran";
  base::Status err;
  ASSERT_FALSE(waitDone(seq, &err)) << "a copy to an unmapped address reported done";
  std::printf("the poll said: %s\n", err.message().c_str());
  EXPECT_NE(err.message().find("resident copy kernel"), std::string::npos) << err.message();
  EXPECT_EQ(err.message().find("timed out"), std::string::npos) << err.message();
  EXPECT_EQ(flags.read(0), 0u) << "the failed copy's flag was set";
  EXPECT_EQ(mem::residentPost(0, src, src + 8, 8), 0u) << "a failed kernel takes nothing more";
}

// Another process's work on the same GPU (bench/gpu_neighbour.cc: copy kernels back to back in its
// own context, no MPS): the two contexts take turns, and the kernel, switched out while it waits
// for copies, must leave and not start again before CGDR_CUDA_RESIDENT_BACKOFF (2 s here), then
// come back once the other process is gone. Alone on the GPU beforehand it must never have left
// so. The copies come as a ping-pong's do (each done before the next, so the kernel stays: a
// kernel that leaves by its idle time before its turn ends is never switched out), of odd sizes
// into distinct targets, every byte checked after each batch.

TEST_F(Resident, AnotherProcessOnTheGpuMakesItLeave) {
  if (!std::getenv("CGDR_TEST_NEIGHBOUR")) GTEST_SKIP() << "runs alone (gpu.resident_neighbour)";
  char* src = nullptr;
  char* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, kCount * kSlot), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, kCount * kSlot), cudaSuccess);
  unsigned batch = 0;
  const mem::ResidentCounts alone0 = mem::residentCounts();
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(pingPongBatch(src, dst, batch++));
  const mem::ResidentCounts alone = mem::residentCounts();
  std::printf("alone: %llu by the kernel in %llu launches; longest between its looks %.1f us\n",
              alone.copies - alone0.copies, alone.launches - alone0.launches, alone.longestNs / 1e3);
  ASSERT_GT(alone.copies - alone0.copies, 20ull * kCount * 9 / 10) << "the kernel seldom ran";
  ASSERT_EQ(alone.turned, alone0.turned) << "it left switched out with no other process on the GPU";

  const std::string cmd = std::string(CGDR_GPU_NEIGHBOUR) + " -d 0 -s 1";
  FILE* other = popen(cmd.c_str(), "r");
  ASSERT_NE(other, nullptr) << cmd;
  char line[256] = {};
  const bool ready = std::fgets(line, sizeof line, other) && std::string(line) == "ready\n";
  if (!ready) pclose(other);
  ASSERT_TRUE(ready) << cmd << " did not start: " << line;
  const auto end = Clock::now() + std::chrono::seconds(20);
  bool ok = true;
  while (ok && mem::residentCounts().turned == alone.turned && Clock::now() < end)
    ok = pingPongBatch(src, dst, batch++);
  const mem::ResidentCounts turned = mem::residentCounts();
  std::printf("beside %s: %llu by the kernel in %llu launches, it left switched out %llu times\n", cmd.c_str(),
              turned.copies - alone.copies, turned.launches - alone.launches, turned.turned - alone.turned);
  EXPECT_GT(turned.turned, alone.turned) << "another process's kernels ran on the GPU and the kernel stayed";

  // Paused: the next batch's copies all go to the copy engine (byte-exact), nothing launched.
  ok = ok && pingPongBatch(src, dst, batch++);
  const mem::ResidentCounts paused = mem::residentCounts();
  EXPECT_EQ(paused.copies, turned.copies) << "the kernel took copies within its pause";
  EXPECT_EQ(paused.launches, turned.launches) << "the kernel started within its pause";
  EXPECT_GE(paused.notRunning - turned.notRunning, static_cast<unsigned long long>(kCount));

  std::string last;
  while (std::fgets(line, sizeof line, other)) last = line;
  EXPECT_EQ(pclose(other), 0) << cmd << " failed";
  std::printf("%s: %s", cmd.c_str(), last.c_str());
  EXPECT_EQ(last.rfind("kernels ", 0), 0u) << last;
  ASSERT_TRUE(ok);

  // The other process is gone: after the pause the kernel takes copies again.
  const auto back = Clock::now() + std::chrono::seconds(20);
  while (mem::residentCounts().copies == paused.copies && Clock::now() < back)
    ASSERT_TRUE(pingPongBatch(src, dst, batch++));
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("after it: %llu by the kernel in %llu launches, %llu more times switched out\n",
              after.copies - paused.copies, after.launches - paused.launches, after.turned - turned.turned);
  EXPECT_GT(after.copies, paused.copies) << "the kernel did not come back within 20 s of the other process's end";
  cudaFree(src);
  cudaFree(dst);
}

// Asked to leave (mem::residentLeave, as the interposed cudaDeviceSynchronize and cudaFree do), a
// running kernel leaves at once instead of staying for its idle time: with CGDR_CUDA_RESIDENT_IDLE
// at 100 ms (gpu.resident_leave) a kernel not asked stays until its 5 ms lifetime ends, and says
// which way it left. Each copy's bytes checked.
TEST_F(Resident, LeavesWhenAsked) {
  if (!std::getenv("CGDR_TEST_LEAVE")) GTEST_SKIP() << "runs alone (gpu.resident_leave)";
  constexpr int kRounds = 20, kControl = 5;
  char* src = nullptr;
  char* dst = nullptr;
  ASSERT_EQ(cudaMalloc(&src, 4096), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dst, 4096), cudaSuccess);
  base::Status err;
  // One copy of `n` bytes of round k's pattern taken by the kernel (started where it was not running).
  auto copy = [&](int k) {
    const std::size_t n = 1 + static_cast<std::size_t>(k) * 211 % 4000;
    std::vector<std::uint8_t> h(n);
    for (std::size_t i = 0; i < n; ++i) h[i] = pattern(k, i);
    ASSERT_EQ(cudaMemcpy(src, h.data(), n, cudaMemcpyHostToDevice), cudaSuccess);
    std::uint64_t seq = 0;
    const auto end = Clock::now() + std::chrono::seconds(20);
    while (!seq && Clock::now() < end) {
      seq = mem::residentPost(0, dst, src, n);
      if (!seq) {
        ASSERT_EQ(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToDevice), cudaSuccess);
        mem::residentWake(0);
      }
    }
    ASSERT_NE(seq, 0u) << "round " << k << ": the kernel never took a copy";
    ASSERT_TRUE(waitDone(seq, &err)) << "round " << k << ": " << err.message();
    std::vector<std::uint8_t> got(n);
    ASSERT_EQ(cudaMemcpy(got.data(), dst, n, cudaMemcpyDeviceToHost), cudaSuccess);
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], h[i]) << "round " << k << " byte " << i;
  };
  const mem::ResidentCounts before = mem::residentCounts();
  for (int k = 0; k < kControl; ++k) {  // not asked: it stays until its lifetime ends
    copy(k);
    if (HasFatalFailure()) return;
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const mem::ResidentCounts control = mem::residentCounts();
  EXPECT_EQ(control.leftAsked, before.leftAsked) << "a kernel not asked said it was";
  for (int k = kControl; k < kControl + kRounds; ++k) {
    copy(k);
    if (HasFatalFailure()) return;
    mem::residentLeave();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  }
  const mem::ResidentCounts after = mem::residentCounts();
  std::printf("%d rounds not asked: %llu launches; %d asked: %llu launches, %llu left when asked\n", kControl,
              control.launches - before.launches, kRounds, after.launches - control.launches,
              after.leftAsked - control.leftAsked);
  // (a kernel asked after its lifetime ended is not counted: with a copy taken microseconds
  // before, nearly every one is)
  EXPECT_GE(after.leftAsked - control.leftAsked, static_cast<unsigned long long>(kRounds * 3 / 4));
  EXPECT_LE(after.leftAsked - control.leftAsked, after.launches - control.launches);
  cudaFree(src);
  cudaFree(dst);
}
