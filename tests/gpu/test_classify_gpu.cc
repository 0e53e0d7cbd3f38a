// Classification of real GPU memory (skipped without a GPU): device and managed memory with the
// owning GPU, pinned host memory as host, freed device memory as an error, and - the assumption
// behind the host-range cache - that the CUDA driver's new mappings pass through mmap, which
// cgdr sees.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <vector>

#include "base/cuda.hpp"
#include "mem/classify.hpp"
#include "mem/host_cache.hpp"

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
