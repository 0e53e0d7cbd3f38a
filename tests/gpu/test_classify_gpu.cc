// Classification of real GPU memory (skipped without a GPU): device and managed memory with the
// owning GPU, pinned host memory as host, freed device memory as an error, counts past the end
// of an allocation or into an unmapped hole of a reserved range as errors, and - the assumption
// behind the host-range cache - that the CUDA driver's new mappings pass through mmap, which
// cgdr sees; the SYNC_MEMOPS mark on cudaMalloc memory and the context's flag for cuMem memory.
#include <gtest/gtest.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/cuda.hpp"
#include "mem/classify.hpp"
#include "mem/host_cache.hpp"
#include "mem/vmm.hpp"
#include "mem/vmm_heap.hpp"
#include "user_side.hpp"

using namespace cgdr;

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!base::cuda::usable()) GTEST_SKIP() << "no usable GPU: " << base::cuda::whyUnusable();
  }
};

TEST_F(Gpu, DeviceAndManaged) {
  int n = base::cuda::deviceCount();
  for (int d = 0; d < n; ++d) {
    cudaSetDevice(d);
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, 1 << 20), cudaSuccess);
    auto r = mem::classify(static_cast<char*>(p) + 100, 1000);
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(r.value().kind, mem::MemKind::kDevice);
    EXPECT_EQ(r.value().device, d);
    cudaFree(p);
    ASSERT_EQ(cudaMallocManaged(&p, 1 << 20), cudaSuccess);
    r = mem::classify(p, 1 << 20);
    ASSERT_TRUE(r.isOk());
    EXPECT_EQ(r.value().kind, mem::MemKind::kManaged);
    cudaFree(p);
  }
  cudaSetDevice(0);
}

TEST_F(Gpu, PinnedHostIsHost) {
  void* p = nullptr;
  ASSERT_EQ(cudaMallocHost(&p, 1 << 16), cudaSuccess);
  auto r = mem::classify(p, 1 << 16);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(r.value().kind, mem::MemKind::kHost);
  cudaFreeHost(p);
}

TEST_F(Gpu, FreedDevicePointerIsAnError) {
  void* p = nullptr;
  ASSERT_EQ(cudaMalloc(&p, 64 << 20), cudaSuccess);
  cudaFree(p);
  auto r = mem::classify(p, 4096);
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().code(), base::Errc::kInvalidBuffer);
}

TEST_F(Gpu, HostPointerCachedAfterFirstQuery) {
  std::vector<char> buf(8192);
  ASSERT_TRUE(mem::classify(buf.data(), buf.size()).isOk());
  EXPECT_TRUE(mem::hostCache().contains(reinterpret_cast<std::uintptr_t>(buf.data()), buf.size()));
}

// New GPU address ranges appear through mmap calls cgdr observes (its own symbols or UCX's
// events), so a cached host range can never silently become GPU memory.
TEST_F(Gpu, DriverMappingsAreSeen) {
  (void)mem::watchUcmEvents();
  std::vector<void*> ps;
  auto before = mem::hostCache().mapGeneration();
  for (int i = 0; i < 8; ++i) {
    void* p = nullptr;
    ASSERT_EQ(cudaMalloc(&p, std::size_t{2} << 30), cudaSuccess);  // new VA ranges
    ps.push_back(p);
  }
  auto after = mem::hostCache().mapGeneration();
  for (void* p : ps) cudaFree(p);
  EXPECT_GT(after, before) << "the CUDA driver mapped 16 GiB of GPU memory without an mmap cgdr saw";
}

// A reserved cuMem range is one range to the driver however much of it is mapped: counts reaching
// an unmapped piece are refused wherever they start, counts up to a hole's edge and across pieces
// mapped back to back are not, and a pointer into a hole is no GPU memory at all.
TEST_F(Gpu, HolesOfAReservedRange) {
  user::VmmAlloc v;  // pieces 0, 1 mapped, 2 not, 3 mapped, 4 not
  const char* what = "";
  ASSERT_TRUE(user::vmmAlloc(1, &v, &what, 5, 0b10100)) << what;
  char* p = static_cast<char*>(v.ptr);
  const std::size_t g = v.piece;
  struct Case {
    std::size_t at, n;
    bool ok;
  } cases[] = {{0, 2 * g, true},         {1, 2 * g - 1, true},     {g - 3, g + 3, true},  {0, 2 * g + 1, false},
               {2 * g - 1, 2, false},    {g + 5, g, false},        {0, 4 * g, false},     {3 * g, g, true},
               {3 * g + 7, g - 7, true}, {3 * g + 7, g - 6, false}, {0, 5 * g, false},    {4 * g - 1, 1, true}};
  for (const Case& c : cases) {
    auto r = mem::classify(p + c.at, c.n);
    ASSERT_EQ(r.isOk(), c.ok) << "at " << c.at << ", " << c.n << " bytes (piece " << g << ")";
    if (c.ok) {
      EXPECT_EQ(r.value().kind, mem::MemKind::kDevice);
      EXPECT_EQ(r.value().base, reinterpret_cast<std::uintptr_t>(p));
    } else {
      EXPECT_EQ(r.status().code(), base::Errc::kBufferHole) << r.status().message();
      EXPECT_NE(r.status().message().find("a hole nothing is mapped to"), std::string::npos) << r.status().message();
    }
  }
  for (std::size_t at : {2 * g, 2 * g + 100, 4 * g + g - 1}) {
    auto r = mem::classify(p + at, 10);
    ASSERT_FALSE(r.isOk()) << "a pointer " << at << " bytes into a range whose piece there is unmapped";
    EXPECT_EQ(r.status().code(), base::Errc::kInvalidBuffer) << r.status().message();
  }
  user::vmmFree(v);
}

// Classify asks about the mappings past a buffer's first only where the buffer spans two blocks of
// the device's granularity: that is the size cuMem pieces come in (one of 1 byte is one block), a
// power of two of at least a page, and a buffer crossing only into the next block's first byte is
// still walked (its last byte in an unmapped piece refused).
TEST_F(Gpu, MappingGranuleIsTheDriversGranularity) {
  user::VmmAlloc v;  // pieces 0 mapped, 1 not
  const char* what = "";
  ASSERT_TRUE(user::vmmAlloc(1, &v, &what, 2, 0b10)) << what;
  const std::size_t g = mem::mappingGranule(0);
  EXPECT_EQ(g, v.piece) << "one piece of 1 byte is one granule";
  EXPECT_GE(g, 4096u);
  EXPECT_EQ(g & (g - 1), 0u) << g << " is no power of two";
  EXPECT_EQ(mem::mappingGranule(-1), 4096u);
  char* p = static_cast<char*>(v.ptr);
  EXPECT_TRUE(mem::classify(p + g - 100, 100).isOk());
  auto r = mem::classify(p + g - 100, 101);
  ASSERT_FALSE(r.isOk()) << "one byte into the unmapped piece";
  EXPECT_EQ(r.status().code(), base::Errc::kBufferHole) << r.status().message();
  user::vmmFree(v);
}

// Many live buffers handed to MPI in turn (more than any short list of recent ones): each gets
// the SYNC_MEMOPS mark the first time, and is remembered - the driver numbers allocations in turn,
// so the table of marked ids (slot id mod 1024) holds all 200 without a collision - so that later
// messages do not ask the driver again: with the marks cleared behind cgdr's back, classifying
// them all again leaves them cleared. (A list of the 16 last marked them all again.)
TEST_F(Gpu, ManyBuffersAreMarkedSyncMemopsOnce) {
  using GetAttr = CUresult (*)(void*, CUpointer_attribute, CUdeviceptr);
  using SetAttr = CUresult (*)(const void*, CUpointer_attribute, CUdeviceptr);
  auto getAttr = reinterpret_cast<GetAttr>(base::cuda::driverEntry("cuPointerGetAttribute"));
  auto setAttr = reinterpret_cast<SetAttr>(base::cuda::driverEntry("cuPointerSetAttribute"));
  ASSERT_NE(getAttr, nullptr);
  ASSERT_NE(setAttr, nullptr);
  auto markOf = [&](void* p) {
    unsigned marked = 7;
    EXPECT_EQ(getAttr(&marked, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, reinterpret_cast<CUdeviceptr>(p)), CUDA_SUCCESS);
    return marked;
  };
  // (Other tests' cuMem buffers flagged the context; cleared, so that no flag stands in for a mark.)
  using CtxFlags = CUresult (*)(unsigned*);
  using SetCtxFlags = CUresult (*)(unsigned);
  auto getFlags = reinterpret_cast<CtxFlags>(base::cuda::driverEntry("cuCtxGetFlags"));
  auto setFlags = reinterpret_cast<SetCtxFlags>(base::cuda::driverEntry("cuCtxSetFlags", 12010));
  unsigned flags = 0;
  if (getFlags && setFlags && getFlags(&flags) == CUDA_SUCCESS) setFlags(flags & ~unsigned{CU_CTX_SYNC_MEMOPS});
  constexpr int kBuffers = 200;
  std::vector<void*> bufs(kBuffers, nullptr);
  std::vector<std::uint64_t> slots;
  for (void*& p : bufs) {
    ASSERT_EQ(cudaMalloc(&p, 4096 + 512 * (slots.size() % 5)), cudaSuccess);
    ASSERT_EQ(markOf(p), 0u) << "a new allocation already marked: nothing to tell here";
    auto r = mem::classify(p, 4096);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    slots.push_back(r.value().bufferId % 1024);
  }
  for (int i = 0; i < kBuffers; ++i) EXPECT_EQ(markOf(bufs[i]), 1u) << "buffer " << i << " classified, not marked";
  std::sort(slots.begin(), slots.end());
  EXPECT_EQ(std::unique(slots.begin(), slots.end()), slots.end())
      << "consecutive allocations share a slot of the marked-id table: the driver's ids are not in turn";
  unsigned zero = 0;
  bool cleared = true;
  for (void* p : bufs)
    cleared = cleared && setAttr(&zero, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS;
  if (cleared) {
    for (int i = 0; i < kBuffers; ++i) {
      ASSERT_TRUE(mem::classify(bufs[i], 4096).isOk());
      EXPECT_EQ(markOf(bufs[i]), 0u) << "buffer " << i << " of " << kBuffers << ": the driver was asked again";
    }
  }
  for (void* p : bufs) cudaFree(p);
  if (!cleared) GTEST_SKIP() << "the driver would not clear the mark: whether it is asked again is not seen";
}


// A cudaMemcpy from pageable memory may return before its bytes land; the driver takes the
// SYNC_MEMOPS mark that makes it wait on cudaMalloc memory but not on cuMem memory, whose first
// classification flags the context CU_CTX_SYNC_MEMOPS instead (the flag cleared first here, as
// other tests' cuMem buffers set it).
TEST_F(Gpu, CuMemMemoryFlagsTheContextSyncMemops) {
  using CtxFlags = CUresult (*)(unsigned*);
  using SetCtxFlags = CUresult (*)(unsigned);
  auto getFlags = reinterpret_cast<CtxFlags>(base::cuda::driverEntry("cuCtxGetFlags"));
  auto setFlags = reinterpret_cast<SetCtxFlags>(base::cuda::driverEntry("cuCtxSetFlags", 12010));
  if (!getFlags || !setFlags) GTEST_SKIP() << "the driver has no cuCtxSetFlags (CUDA 12.1)";
  void* d = nullptr;
  ASSERT_EQ(cudaMalloc(&d, 4096), cudaSuccess);
  EXPECT_TRUE(base::cuda::setSyncMemops(d)) << "the driver refused the mark on cudaMalloc memory";
  unsigned flags = 0;
  ASSERT_EQ(getFlags(&flags), CUDA_SUCCESS);
  ASSERT_EQ(setFlags(flags & ~unsigned{CU_CTX_SYNC_MEMOPS}), CUDA_SUCCESS);
  ASSERT_TRUE(mem::classify(d, 4096).isOk());
  ASSERT_EQ(getFlags(&flags), CUDA_SUCCESS);
  EXPECT_FALSE(flags & CU_CTX_SYNC_MEMOPS) << "cudaMalloc memory takes the mark: the context is left alone";

  user::VmmAlloc v;
  const char* what = "";
  ASSERT_TRUE(user::vmmAlloc(1 << 20, &v, &what)) << what;
  bool marked = base::cuda::setSyncMemops(v.ptr);
  if (marked) std::printf("note: this driver takes the SYNC_MEMOPS mark on cuMem memory\n");
  ASSERT_TRUE(mem::classify(v.ptr, 1000).isOk());
  ASSERT_EQ(getFlags(&flags), CUDA_SUCCESS);
  if (!marked) {
    EXPECT_TRUE(flags & CU_CTX_SYNC_MEMOPS) << "cuMem memory seen, the context not flagged";
  }
  unsigned runtimeFlags = 0;
  ASSERT_EQ(cudaGetDeviceFlags(&runtimeFlags), cudaSuccess);
  if (!marked) {
    EXPECT_TRUE(runtimeFlags & cudaDeviceSyncMemops) << "the runtime does not see the context's flag";
  }
  EXPECT_TRUE(base::cuda::setContextSyncMemops(0, true));  // flagged already: nothing to wait for
  user::vmmFree(v);
  cudaFree(d);
}

// cgdr's exportable heap answers for its own buffers without asking the driver per message: what
// classify says of a heap buffer must be what the driver says of it (device, buffer id, the
// chunk's range), for buffers sharing a chunk and ones with a chunk of their own, at their first,
// middle and last byte, on every GPU. A count past the range cudaMalloc gave is refused (the
// driver sees only the chunk around it), so is a range given back, and a chunk given back and
// made again (a new allocation to the driver) is seen with its new id.
TEST_F(Gpu, HeapBuffersAreClassifiedAsTheDriverSeesThem) {
  int n = base::cuda::deviceCount();
  for (int d = 0; d < n; ++d) {
    ASSERT_EQ(cudaSetDevice(d), cudaSuccess);
    std::vector<std::pair<char*, std::size_t>> bufs;
    for (std::size_t size : {std::size_t{1}, std::size_t{1000}, std::size_t{4096}, std::size_t{65539},
                             std::size_t{1} << 20, (std::size_t{3} << 20) + 5}) {
      auto* p = static_cast<char*>(mem::heapAllocate(size, d));
      ASSERT_NE(p, nullptr) << "the heap could not serve " << size << " bytes on GPU " << d;
      bufs.emplace_back(p, size);
    }
    for (auto [p, size] : bufs) {
      for (std::size_t off : {std::size_t{0}, size / 2, size - 1}) {
        auto r = mem::classify(p + off, size - off);
        ASSERT_TRUE(r.isOk()) << r.status().message();
        base::cuda::PointerAttrs a;
        ASSERT_TRUE(base::cuda::queryPointer(p + off, true, &a));
        EXPECT_EQ(r.value().kind, mem::MemKind::kDevice);
        EXPECT_EQ(a.device, d);
        EXPECT_EQ(r.value().device, a.device) << size << " bytes, offset " << off;
        EXPECT_NE(a.bufferId, 0u);
        EXPECT_EQ(r.value().bufferId, a.bufferId) << size << " bytes, offset " << off;
        EXPECT_EQ(r.value().base, a.rangeStart) << size << " bytes, offset " << off;
        EXPECT_EQ(r.value().extent, a.rangeSize) << size << " bytes, offset " << off;
      }
      std::size_t rounded = (size + 255) / 256 * 256;
      auto over = mem::classify(p, rounded + 1);
      ASSERT_FALSE(over.isOk()) << size << " bytes: a count one past its range was taken";
      EXPECT_EQ(over.status().code(), base::Errc::kBufferOverrun);
    }
    // The large buffer's chunk is its own: given back, it goes back to the driver; the next one of
    // that size is a new allocation, whatever its address.
    auto [big, bigSize] = bufs.back();
    auto first = mem::classify(big, bigSize);
    ASSERT_TRUE(first.isOk());
    ASSERT_TRUE(mem::heapRelease(big));
    EXPECT_FALSE(mem::classify(big, 1).isOk()) << "a chunk given back to the driver still classified";
    auto* again = static_cast<char*>(mem::heapAllocate(bigSize, d));
    ASSERT_NE(again, nullptr);
    auto r = mem::classify(again, bigSize);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    base::cuda::PointerAttrs a;
    ASSERT_TRUE(base::cuda::queryPointer(again, true, &a));
    EXPECT_EQ(r.value().bufferId, a.bufferId);
    EXPECT_NE(r.value().bufferId, first.value().bufferId) << "a new chunk kept the old one's id";
    EXPECT_EQ(r.value().base, a.rangeStart);
    EXPECT_EQ(r.value().extent, a.rangeSize);
    ASSERT_TRUE(mem::heapRelease(again));
    // A small range given back while its chunk holds others: still mapped, refused as freed.
    ASSERT_TRUE(mem::heapRelease(bufs[0].first));
    auto freed = mem::classify(bufs[0].first, 1);
    ASSERT_FALSE(freed.isOk());
    EXPECT_EQ(freed.status().code(), base::Errc::kInvalidBuffer);
    for (std::size_t i = 1; i + 1 < bufs.size(); ++i) ASSERT_TRUE(mem::heapRelease(bufs[i].first));
  }
  cudaSetDevice(0);
}
