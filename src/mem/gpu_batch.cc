// The copy kernel's host side (mem/gather.hpp): its fat binary, embedded at build time
// (cmake/embed.cmake), loaded through the runtime's library calls on first use, and launched for
// a window of small GPU-to-GPU copies (GpuCopy::startMany in mem/gpu_copy.cc).
#include "mem/gpu_batch.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>

#include "base/config.hpp"
#include "base/log.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::mem {
namespace {

base::ChoiceSetting gBatch("CGDR_CUDA_BATCH", "auto", {"auto", "off"},
                           "GPU-to-GPU copies of a window of messages (a sender's pushes issued while its earlier "
                           "copies still run, a receiver's pulls of the envelopes one progress step reads) moved by "
                           "one copy-kernel launch instead of one copy-engine operation each (~2.5-3.5 us a copy "
                           "there, ~0.2 us for a small one in the kernel). off: always the copy engine.");
base::Setting<base::Bytes> gBatchLimit("CGDR_CUDA_BATCH_LIMIT", "1M", "bytes",
                                       "The largest message CGDR_CUDA_BATCH moves with the copy kernel. Windows of 128 "
                                       "KiB-1 MiB messages moved 1.2-2.5x more on the kernel than on the copy engines "
                                       "(two H100s); from 2 MiB the engines move as much or more (natively, both ways "
                                       "at once, 0.89-0.95x on the kernel at 2-16 MiB).");

// Bytes per block of a message (one pass of 256 threads, four 16-byte loads each); a window's
// grid stays within kMostBlocks (two waves of resident 256-thread blocks on a 132-SM H100), its
// blocks then moving more each.
constexpr std::uint64_t kBytesPerBlock = 16 * 1024;
constexpr std::uint64_t kMostBlocks = 2048;

}  // namespace

#if CGDR_HAVE_CUDA
extern const unsigned char kGatherFatbin[];

namespace {

struct Kernel {
  std::once_flag once;
  cudaKernel_t fn = nullptr, resident = nullptr;
  std::atomic<bool> broken{false};
};

Kernel& kernel() {
  static Kernel* k = new Kernel;  // outlives static destructors; the driver cleans up at exit
  return *k;
}

// Loads the fat binary once per process (libraries load into each context on first use).
cudaKernel_t load() {
  Kernel& k = kernel();
  std::call_once(k.once, [&k] {
    cudaLibrary_t lib = nullptr;
    cudaError_t e = cudaLibraryLoadData(&lib, kGatherFatbin, nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (e == cudaSuccess) e = cudaLibraryGetKernel(&k.fn, lib, "cgdr_gather");
    if (e == cudaSuccess) e = cudaLibraryGetKernel(&k.resident, lib, "cgdr_resident");
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      k.fn = nullptr;
      k.resident = nullptr;
      k.broken.store(true, std::memory_order_relaxed);
      CGDR_LOG(kInfo, kCuda, "copy kernel unavailable (%s): small copies stay on the copy engine",
               cudaGetErrorString(e));
    }
  });
  return k.fn;
}

}  // namespace

bool batchable(std::size_t n) {
  static const std::size_t limit = gBatchLimit.get().value;
  static const bool on = gBatch.get().index == 0;
  return on && n > 0 && n <= limit && !kernel().broken.load(std::memory_order_relaxed);
}

int launchGather(const GatherArgs& a, void* stream) {
  cudaKernel_t fn = load();
  if (!fn) return static_cast<int>(cudaErrorInvalidDeviceFunction);
  std::uint64_t most = 0;
  for (std::uint32_t i = 0; i < a.count; ++i) most = std::max(most, a.item[i].n);
  const std::uint64_t split = std::clamp<std::uint64_t>((most + kBytesPerBlock - 1) / kBytesPerBlock, 1,
                                                         std::max<std::uint64_t>(1, kMostBlocks / a.count));
  void* params[] = {const_cast<GatherArgs*>(&a)};  // (copied by the launch)
  cudaError_t e = cudaLaunchKernel(reinterpret_cast<const void*>(fn), dim3(a.count, static_cast<unsigned>(split)),
                                   dim3(256), params, 0, static_cast<cudaStream_t>(stream));
  if (e == cudaErrorInvalidDeviceFunction || e == cudaErrorNoKernelImageForDevice) {
    // This GPU has no image of the kernel (and its PTX cannot be compiled here): never again.
    kernel().broken.store(true, std::memory_order_relaxed);
    CGDR_LOG(kInfo, kCuda, "copy kernel cannot run on this GPU (%s): small copies stay on the copy engine",
             cudaGetErrorString(e));
  }
  return static_cast<int>(e);
}

int prepareKernels() {
  cudaKernel_t fn = load();
  if (!fn) return static_cast<int>(cudaErrorInvalidDeviceFunction);
  cudaFuncAttributes attr;
  cudaError_t e = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(fn));
  if (e == cudaSuccess) e = cudaFuncGetAttributes(&attr, reinterpret_cast<const void*>(kernel().resident));
  return static_cast<int>(e);
}

int launchResident(ResidentBox* box, ResidentCrew* crew, int blocks, std::uint64_t gen, std::uint64_t seq,
                   std::uint64_t idleNs, std::uint64_t lifeNs, std::uint64_t soloBytes, std::uint64_t turnNs,
                   void* stream) {
  if (!load()) return static_cast<int>(cudaErrorInvalidDeviceFunction);
  if (!crew) blocks = 1;
  unsigned long long g = gen, s = seq, idle = idleNs, life = lifeNs, solo = soloBytes, turn = turnNs;
  void* params[] = {&box, &crew, &g, &s, &idle, &life, &solo, &turn};
  return static_cast<int>(cudaLaunchKernel(reinterpret_cast<const void*>(kernel().resident),
                                           dim3(static_cast<unsigned>(std::clamp(blocks, 1, kResidentMaxBlocks))),
                                           dim3(kResidentThreads), params, 0, static_cast<cudaStream_t>(stream)));
}

#else

bool batchable(std::size_t) { return false; }
int launchGather(const GatherArgs&, void*) { return 1; }
int prepareKernels() { return 1; }
int launchResident(ResidentBox*, ResidentCrew*, int, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                   std::uint64_t, std::uint64_t, void*) {
  return 1;
}

#endif

}  // namespace cgdr::mem
