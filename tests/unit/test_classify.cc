// Classification of host memory and the host-range cache: hits after the first query, and the
// cache forgets a range as soon as it is mapped or unmapped again (the CUDA driver creates GPU
// ranges through mmap, which cgdr interposes).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <vector>

#include "base/cuda.hpp"
#include "mem/classify.hpp"
#include "mem/host_cache.hpp"
#include "mem/pinned_pool.hpp"

using namespace cgdr;

namespace {
std::uintptr_t u(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
}  // namespace

TEST(Classify, HostMemoryIsHost) {
  std::vector<char> heap(1000);
  static char data[64];
  char stack[32] = {};
  for (auto [p, n] : {std::pair<const void*, size_t>{heap.data(), heap.size()}, {data, sizeof data},
                      {stack, sizeof stack}}) {
    auto r = mem::classify(p, n);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    EXPECT_EQ(r.value().kind, mem::MemKind::kHost);
    EXPECT_EQ(r.value().device, -1);
  }
  // Zero bytes never touch memory, whatever the pointer.
  auto z = mem::classify(nullptr, 0);
  ASSERT_TRUE(z.isOk());
  EXPECT_EQ(z.value().kind, mem::MemKind::kHost);
}

TEST(Classify, CpuReadable) {
  std::vector<char> heap(5000);
  EXPECT_TRUE(mem::cpuReadable(heap.data(), heap.size()));
  void* none = mmap(nullptr, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(none, MAP_FAILED);
  EXPECT_FALSE(mem::cpuReadable(none, 100));
  munmap(none, 8192);
  EXPECT_FALSE(mem::cpuReadable(none, 1));  // unmapped now
  EXPECT_FALSE(mem::cpuReadable(reinterpret_cast<void*>(0x10), 8));
  // Readable start, unreadable end.
  char* two = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  mprotect(two + 4096, 4096, PROT_NONE);
  EXPECT_FALSE(mem::cpuReadable(two, 8192));
  EXPECT_TRUE(mem::cpuReadable(two, 4096));
  munmap(two, 8192);
}

TEST(HostCache, InsertAndContain) {
  mem::HostCache& c = mem::hostCache();
  c.clear();
  c.insert(0x100000, 0x104000, c.mapGeneration());
  EXPECT_TRUE(c.contains(0x100000, 16));
  EXPECT_TRUE(c.contains(0x100010, 0x3ff0));
  EXPECT_FALSE(c.contains(0x100010, 0x4000));  // runs past the range
  EXPECT_FALSE(c.contains(0x200000, 1));
  EXPECT_FALSE(c.contains(~std::uintptr_t{0} - 4, 16));  // overflow never matches
}

TEST(HostCache, InsertRefusedAfterMapChange) {
  mem::HostCache& c = mem::hostCache();
  c.clear();
  auto g = c.mapGeneration();
  c.invalidate(0x500000, 0x501000);  // a mapping changed during the driver query
  c.insert(0x300000, 0x301000, g);
  EXPECT_FALSE(c.contains(0x300000, 8));
}

TEST(HostCache, ForgetsRangeOnRemap) {
  (void)mem::watchUcmEvents();
  char* p = static_cast<char*>(mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  auto r = mem::classify(p, 100);
  ASSERT_TRUE(r.isOk());
  if (base::cuda::usable()) {
    EXPECT_TRUE(mem::hostCache().contains(u(p), 100));
  } else {
    mem::hostCache().insert(u(p), u(p) + 4096, mem::hostCache().mapGeneration());
  }
  ASSERT_TRUE(mem::hostCache().contains(u(p), 100));
  // A new mapping over the same range (what a driver reserving GPU addresses does).
  void* q = mmap(p, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(q, p);
  EXPECT_FALSE(mem::hostCache().contains(u(p), 100));
  mem::hostCache().insert(u(p), u(p) + 4096, mem::hostCache().mapGeneration());
  munmap(p, 1 << 16);
  EXPECT_FALSE(mem::hostCache().contains(u(p), 100));
}

TEST(HostCache, ForgetsRangeOnMremap) {
  (void)mem::watchUcmEvents();  // UCX (linked by some MPIs) patches mremap in place
  char* p = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  mem::hostCache().insert(u(p), u(p) + 8192, mem::hostCache().mapGeneration());
  void* q = mremap(p, 8192, 1 << 20, MREMAP_MAYMOVE);
  ASSERT_NE(q, MAP_FAILED);
  EXPECT_FALSE(mem::hostCache().contains(u(p), 8));
  munmap(q, 1 << 20);
}

// cgdr remembers that libucm is absent (looking it up on every GPU buffer's classification cost
// ~1 us per call on the GPU machine) until the loader has loaded something new: libucm loaded
// after a miss is still found, and its events then reach the cache.
TEST(HostCache, FindsUcmLoadedAfterAMiss) {
  if (mem::watchUcmEvents()) GTEST_SKIP() << "libucm is loaded in this test process already";
  EXPECT_FALSE(mem::watchUcmEvents());  // the remembered miss
  void* lib = dlopen(CGDR_TEST_UCM_LIB, RTLD_NOW | RTLD_GLOBAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  ASSERT_TRUE(mem::watchUcmEvents());
  auto events = reinterpret_cast<int (*)()>(dlsym(lib, "cgdr_test_ucm_events"));
  auto fire = reinterpret_cast<void (*)(int, void*, std::size_t)>(dlsym(lib, "cgdr_test_ucm_fire"));
  ASSERT_TRUE(events && fire);
  EXPECT_EQ(events(), (1 << 16) | (1 << 17));  // UCM_EVENT_VM_MAPPED | UCM_EVENT_VM_UNMAPPED
  std::uintptr_t lo = 0x7000000000, hi = lo + (1 << 20);
  mem::hostCache().insert(lo, hi, mem::hostCache().mapGeneration());
  ASSERT_TRUE(mem::hostCache().contains(lo, 64));
  fire(1 << 17, reinterpret_cast<void*>(lo + 4096), 4096);  // libucm saw a munmap cgdr's hooks did not
  EXPECT_FALSE(mem::hostCache().contains(lo, 64));
  EXPECT_TRUE(mem::watchUcmEvents());
}

TEST(PinnedPool, ReusesBuffers) {
  auto before = mem::pinnedPoolStats();
  void* first = nullptr;
  {
    auto b = mem::acquirePinned(5000);
    ASSERT_TRUE(b.isOk());
    EXPECT_GE(b.value().capacity(), 5000u);
    first = b.value().data();
  }
  auto again = mem::acquirePinned(6000);  // same size class
  ASSERT_TRUE(again.isOk());
  EXPECT_EQ(again.value().data(), first);
  auto after = mem::pinnedPoolStats();
  EXPECT_EQ(after.reuses, before.reuses + 1);
  EXPECT_EQ(after.allocations, before.allocations + 1);
}
