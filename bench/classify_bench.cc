// Median cost of classifying a buffer handed to MPI (target: host pointer <= 50 ns).
//   cgdr-classify-bench --benchmark_repetitions=20 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sys/mman.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include "base/cuda.hpp"
#include "mem/classify.hpp"
#include "mem/gpu_copy.hpp"
#include "mem/vmm_heap.hpp"
#include "user_side.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

using namespace cgdr;

static void classifyLoop(benchmark::State& state, const void* p, std::size_t n) {
  for (auto _ : state) {
    auto r = mem::classify(p, n);
    benchmark::DoNotOptimize(r);
  }
}

// A small heap buffer, as most small messages are.
static void BM_ClassifyHostHeap(benchmark::State& state) {
  std::vector<char> buf(4096);
  classifyLoop(state, buf.data(), buf.size());
}
BENCHMARK(BM_ClassifyHostHeap);

// A large mmap-backed buffer (what malloc gives for big messages, and what OSU allocates).
static void BM_ClassifyHostMmap(benchmark::State& state) {
  std::size_t n = 8 << 20;
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  classifyLoop(state, p, n);
  munmap(p, n);
}
BENCHMARK(BM_ClassifyHostMmap);

// The driver query alone on a host pointer: what the cache saves.
static void BM_DriverQueryHost(benchmark::State& state) {
  if (!base::cuda::usable()) {
    state.SkipWithError("no GPU");
    return;
  }
  std::vector<char> buf(4096);
  base::cuda::PointerAttrs a;
  for (auto _ : state) benchmark::DoNotOptimize(base::cuda::queryPointer(buf.data(), false, &a));
}
BENCHMARK(BM_DriverQueryHost);

#if CGDR_HAVE_CUDA
static void gpuLoop(benchmark::State& state, bool managed) {
  if (!base::cuda::usable()) {
    state.SkipWithError("no GPU");
    return;
  }
  void* p = nullptr;
  if ((managed ? cudaMallocManaged(&p, 1 << 20) : cudaMalloc(&p, 1 << 20)) != cudaSuccess) {
    state.SkipWithError("allocation failed");
    return;
  }
  classifyLoop(state, p, 1 << 20);
  cudaFree(p);
}
static void BM_ClassifyDevice(benchmark::State& state) { gpuLoop(state, false); }
static void BM_ClassifyManaged(benchmark::State& state) { gpuLoop(state, true); }
BENCHMARK(BM_ClassifyDevice);
BENCHMARK(BM_ClassifyManaged);

// One small GPU buffer for the loops below: 4 KiB of cudaMalloc memory, or the program's own cuMem
// memory (vmm: one allocation of the device's granularity). ptr is null where none could be made.
class SmallGpuBuffer {
 public:
  explicit SmallGpuBuffer(bool vmm) : vmm_(vmm) {
    const char* what = "";
    if (base::cuda::usable() && (vmm ? user::vmmAlloc(1, &v_, &what) : cudaMalloc(&p_, 4096) == cudaSuccess))
      ptr = vmm ? v_.ptr : p_;
  }
  ~SmallGpuBuffer() {
    if (ptr && vmm_) user::vmmFree(v_);
    else if (ptr) cudaFree(p_);
  }
  SmallGpuBuffer(const SmallGpuBuffer&) = delete;
  SmallGpuBuffer& operator=(const SmallGpuBuffer&) = delete;
  void* ptr = nullptr;

 private:
  bool vmm_;
  void* p_ = nullptr;
  user::VmmAlloc v_;
};

// N small buffers handed to MPI in turn, as a program with many live buffers does (PyTorch's
// caching allocator, a ring of message buffers): each is marked SYNC_MEMOPS once, and classify
// must remember which it marked for every one of them, or it asks the driver again each message.
// cuMem: the user's own cuMem allocations (the driver takes no mark there: the context is flagged).
static void cyclingLoop(benchmark::State& state, bool vmm) {
  const int n = static_cast<int>(state.range(0));
  std::vector<std::unique_ptr<SmallGpuBuffer>> bufs;
  for (int i = 0; i < n; ++i) {
    bufs.push_back(std::make_unique<SmallGpuBuffer>(vmm));
    if (!bufs.back()->ptr) {
      state.SkipWithError("no GPU, or allocation failed");
      return;
    }
  }
  std::size_t i = 0;
  for (auto _ : state) {
    auto r = mem::classify(bufs[i]->ptr, 4096);
    benchmark::DoNotOptimize(r);
    if (++i == bufs.size()) i = 0;
  }
}
static void BM_ClassifyDeviceCycling(benchmark::State& state) { cyclingLoop(state, false); }
static void BM_ClassifyVmmCycling(benchmark::State& state) { cyclingLoop(state, true); }
BENCHMARK(BM_ClassifyDeviceCycling)->Arg(1)->Arg(16)->Arg(17)->Arg(64)->Arg(1000);
BENCHMARK(BM_ClassifyVmmCycling)->Arg(1)->Arg(17)->Arg(64);

// The driver's query alone on one small GPU buffer: Arg 3 the type, device and id; Arg 6 also the
// range (what classify asks for memory outside cgdr's heap). What classify adds to it for such a
// buffer: BM_ClassifyDeviceCycling/1 or BM_ClassifyVmmCycling/1 minus the /6 here; what a buffer
// of cgdr's heap is spared: the /6 here minus BM_ClassifyDeviceHeap's lookup.
static void driverQueryLoop(benchmark::State& state, bool vmm) {
  SmallGpuBuffer b(vmm);
  if (!b.ptr) {
    state.SkipWithError("no GPU, or allocation failed");
    return;
  }
  const bool withRange = state.range(0) == 6;
  base::cuda::PointerAttrs a;
  for (auto _ : state) benchmark::DoNotOptimize(base::cuda::queryPointer(b.ptr, withRange, &a));
}
static void BM_DriverQueryDevice(benchmark::State& state) { driverQueryLoop(state, false); }
static void BM_DriverQueryVmm(benchmark::State& state) { driverQueryLoop(state, true); }
BENCHMARK(BM_DriverQueryDevice)->Arg(3)->Arg(6);
BENCHMARK(BM_DriverQueryVmm)->Arg(3)->Arg(6);

// A buffer over N cuMem pieces mapped back to back in one reserved range (PyTorch's expandable
// segments): the driver's range is the reservation, so classify walks the N mappings, one query
// each, to know none is missing.
static void BM_ClassifyDevicePieces(benchmark::State& state) {
  const int pieces = static_cast<int>(state.range(0));
  user::VmmAlloc v;
  const char* what = "";
  if (!base::cuda::usable() || !user::vmmAlloc(1, &v, &what, pieces)) {
    state.SkipWithError("no GPU or no cuMem");
    return;
  }
  classifyLoop(state, v.ptr, v.size);
  user::vmmFree(v);
}
BENCHMARK(BM_ClassifyDevicePieces)->Arg(1)->Arg(3)->Arg(13);

// BM_ClassifyDevice once cgdr made GPU state in the context (mem::noteGpuState, as where it makes
// a stream, an event, a mapping; the heap's chunks below do too): each classify of a GPU buffer then
// also asks the driver for that context's ID (mem::gpuStateLost: a reset cgdr did not interpose).
// What that costs each GPU message: this minus BM_ClassifyDevice. Registered after every benchmark
// that must not pay it (the state stays noted).
static void BM_ClassifyDeviceStateNoted(benchmark::State& state) {
  mem::noteGpuState();
  gpuLoop(state, false);
}
BENCHMARK(BM_ClassifyDeviceStateNoted);

// mem::DeviceScope, taken around each of cgdr's GPU calls (a copy's issue, an IPC open): with
// cgdr's context current (the state noted above), as in nearly every program; its form until the
// fifty-seventh session asked cudaGetDevice instead (BM_CudaGetDevice). And where the program made
// a context of its own current: cgdr's is pushed and popped around the call.
// (cudaFree(nullptr) first: the runtime's context made, as in any process cgdr copies in.)
static void BM_CudaGetDevice(benchmark::State& state) {
  int d = 0;
  cudaFree(nullptr);
  for (auto _ : state) benchmark::DoNotOptimize(cudaGetDevice(&d));
}
static void BM_DeviceScope(benchmark::State& state) {
  int d = 0;
  if (base::cuda::usable() && cudaFree(nullptr) == cudaSuccess) mem::noteGpuState();
  if (!base::cuda::usable() || cudaGetDevice(&d) != cudaSuccess || !mem::workContext(d)) {
    state.SkipWithError("no GPU");
    return;
  }
  for (auto _ : state) {
    mem::DeviceScope scope(d);
    benchmark::ClobberMemory();
  }
}
static void BM_DeviceScopeOwnContext(benchmark::State& state) {
  int d = 0;
  using Create = int (*)(void**, void*, unsigned, int);  // cuCtxCreate_v4 (CUDA 12.5)
  using Destroy = int (*)(void*);
  auto create = reinterpret_cast<Create>(base::cuda::driverEntry("cuCtxCreate", 12050));
  auto destroy = reinterpret_cast<Destroy>(base::cuda::driverEntry("cuCtxDestroy"));
  void* own = nullptr;
  if (base::cuda::usable() && cudaFree(nullptr) == cudaSuccess) mem::noteGpuState();
  if (!base::cuda::usable() || cudaGetDevice(&d) != cudaSuccess || !mem::workContext(d) || !create || !destroy ||
      create(&own, nullptr, 0, d) != 0) {
    state.SkipWithError("no GPU, or no context of its own made");
    return;
  }
  for (auto _ : state) {
    mem::DeviceScope scope(d);
    benchmark::ClobberMemory();
  }
  destroy(own);
  cudaSetDevice(d);
}
BENCHMARK(BM_CudaGetDevice);
BENCHMARK(BM_DeviceScope);
BENCHMARK(BM_DeviceScopeOwnContext);

// A cudaMalloc buffer served by the exportable heap (what containers get): classify answers it
// from the heap's live ranges (1000 of them here) and the driver's view of its chunk, taken when
// the chunk was made, without asking the driver. Run after the others: once the heap holds a
// chunk, every device pointer is looked up there first.
// One of them (nullptr, the benchmark skipped, where there is no GPU or no heap).
static const void* heapBuffer(benchmark::State& state) {
  static std::vector<void*> live;
  for (int i = 0; base::cuda::usable() && live.empty() && i < 1000; ++i)
    if (void* q = mem::heapAllocate(4096 + 256 * (i % 7), 0)) live.push_back(q);
  if (live.empty()) state.SkipWithError("no GPU or no heap");
  return live.empty() ? nullptr : live[live.size() / 2];
}
static void BM_ClassifyDeviceHeap(benchmark::State& state) {
  if (const void* p = heapBuffer(state)) classifyLoop(state, p, 4096);
}
// The driver query alone on that buffer: what classify paid for it on top of the heap's lookup
// until the heap kept its chunks' driver view (thirtieth session).
static void BM_DriverQueryDeviceHeap(benchmark::State& state) {
  base::cuda::PointerAttrs a;
  if (const void* p = heapBuffer(state))
    for (auto _ : state) benchmark::DoNotOptimize(base::cuda::queryPointer(p, true, &a));
}
// The heap's own lookup of that buffer alone (each message asks it again: the thread's last
// answer holds while the heap is unchanged).
static void BM_HeapLookup(benchmark::State& state) {
  mem::HeapPlace place;
  if (const void* p = heapBuffer(state))
    for (auto _ : state) benchmark::DoNotOptimize(mem::heapHolding(p, &place));
}
// cudaMalloc memory (the runtime's) once the heap exists: the lookup finds nothing.
static void BM_ClassifyDeviceHeapExists(benchmark::State& state) {
  if (heapBuffer(state)) gpuLoop(state, false);
}
BENCHMARK(BM_ClassifyDeviceHeap);
BENCHMARK(BM_DriverQueryDeviceHeap);
BENCHMARK(BM_HeapLookup);
BENCHMARK(BM_ClassifyDeviceHeapExists);
#endif

BENCHMARK_MAIN();
