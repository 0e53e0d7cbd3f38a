// cudaMalloc in a program linked with the shared CUDA runtime, with cgdr preloaded: whether the
// allocation comes from cgdr's exportable heap ("--expect heap") or from the runtime ("--expect
// real"), that it behaves like cudaMalloc memory either way (alignment, pointer attributes,
// no overlap between live allocations, every byte kept, usable from a second GPU), that memory
// freed and never shared goes back to the driver, and that messages between such buffers arrive
// byte-exact, also when buffers are freed and allocated again between messages.
// "--hook-only": on a machine without a GPU, only that the program's cudaMalloc/cudaFree are
// cgdr's entry points and hand back the runtime's own answer.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "testlib.hpp"

namespace {

bool ownedByCgdr(void* fn) {
  Dl_info info{};
  return dladdr(fn, &info) && info.dli_fname && std::strstr(info.dli_fname, "libcgdr");
}

// Whether p lies in cuMem memory exportable as a POSIX file descriptor (driver entry points
// through the runtime: this program does not link libcuda; cuda.h only for the types).
bool exportable(void* p) {
  static PFN_cuMemRetainAllocationHandle_v11000 retain = nullptr;
  static PFN_cuMemGetAllocationPropertiesFromHandle_v10020 props = nullptr;
  static PFN_cuMemRelease_v10020 release = nullptr;
  if (!retain) {
    cudaDriverEntryPointQueryResult q;
    cudaGetDriverEntryPointByVersion("cuMemRetainAllocationHandle", reinterpret_cast<void**>(&retain), 12000,
                                     cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuMemGetAllocationPropertiesFromHandle", reinterpret_cast<void**>(&props),
                                     12000, cudaEnableDefault, &q);
    cudaGetDriverEntryPointByVersion("cuMemRelease", reinterpret_cast<void**>(&release), 12000, cudaEnableDefault,
                                     &q);
  }
  CUmemGenericAllocationHandle h = 0;
  if (!retain || !props || !release || retain(&h, p) != CUDA_SUCCESS) return false;
  CUmemAllocationProp prop{};
  bool fd = props(&prop, h) == CUDA_SUCCESS && (prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  release(h);
  return fd;
}

#define CK(call) T_CHECK((call) == cudaSuccess, "%s: %s", #call, cudaGetErrorString(cudaGetLastError()))

void fill(void* d, std::size_t n, std::uint32_t seed) {
  std::vector<std::uint8_t> h(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = t::pat(seed, i);
  CK(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice));
  // From pageable memory the copy may still be running when cudaMemcpy returns; MPI reads the
  // buffer outside the default stream (as with any GPU-aware MPI): the program waits first.
  CK(cudaDeviceSynchronize());
}

bool check(const void* d, std::size_t n, std::uint32_t seed, const char* what) {
  std::vector<std::uint8_t> h(n);
  CK(cudaMemcpy(h.data(), d, n, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < n; ++i)
    if (h[i] != t::pat(seed, i)) {
      T_CHECK(false, "%s: byte %zu of %zu is %u, expected %u", what, i, n, h[i], t::pat(seed, i));
      return false;
    }
  return true;
}

const std::size_t kSizes[] = {1, 3, 255, 256, 4097, (1u << 20) - 1, 1u << 20, (1u << 20) + 1, (3u << 20) + 5,
                              (64u << 20) + 13};

// Alignment, attributes, exportability as expected, and no two live allocations overlapping.
void allocations(bool heap, int device) {
  std::vector<void*> live;
  int idx = 0;
  for (int round = 0; round < 3; ++round)
    for (std::size_t n : kSizes) {
      void* p = nullptr;
      CK(cudaMalloc(&p, n));
      T_CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0, "cudaMalloc(%zu) = %p: not 256-byte aligned", n, p);
      cudaPointerAttributes a{};
      CK(cudaPointerGetAttributes(&a, p));
      T_CHECK(a.type == cudaMemoryTypeDevice && a.device == device, "cudaMalloc(%zu): type %d device %d", n,
              static_cast<int>(a.type), a.device);
      T_CHECK(exportable(p) == heap, "cudaMalloc(%zu): exportable %d, expected %d", n, exportable(p), heap);
      fill(p, n, t::seedOf(t::rank(), idx++, 1));
      live.push_back(p);
    }
  idx = 0;
  for (void* p : live) {
    std::size_t n = kSizes[idx % std::size(kSizes)];
    check(p, n, t::seedOf(t::rank(), idx++, 1), "live allocation kept its bytes");
  }
  for (std::size_t i = 0; i < live.size(); i += 2) CK(cudaFree(live[i]));  // holes, then refill them
  for (std::size_t i = 0; i < live.size(); i += 2) {
    CK(cudaMalloc(&live[i], kSizes[i % std::size(kSizes)]));
    fill(live[i], kSizes[i % std::size(kSizes)], t::seedOf(t::rank(), static_cast<int>(i), 2));
  }
  for (std::size_t i = 0; i < live.size(); ++i) {
    std::uint32_t seed = t::seedOf(t::rank(), static_cast<int>(i), i % 2 ? 1 : 2);
    check(live[i], kSizes[i % std::size(kSizes)], seed, "after frees and new allocations");
  }
  for (void* p : live) CK(cudaFree(p));
  CK(cudaFree(nullptr));
  void* none = reinterpret_cast<void*>(1);
  T_CHECK(cudaMalloc(&none, 0) == cudaSuccess, "cudaMalloc(0) failed");
}

// Memory never handed to a peer goes back to the driver when freed: its addresses are no longer
// device memory (cudaMemGetInfo would not tell: other processes share the GPU).
void returned(bool heap) {
  std::vector<void*> ps(8);
  for (void*& p : ps) CK(cudaMalloc(&p, 32u << 20));
  for (void* p : ps) CK(cudaFree(p));
  if (!heap) return;  // the runtime may keep freed memory mapped for reuse
  for (void* p : ps) {
    cudaPointerAttributes a{};
    cudaError_t e = cudaPointerGetAttributes(&a, p);
    (void)cudaGetLastError();
    T_CHECK(e != cudaSuccess || a.type != cudaMemoryTypeDevice, "heap: %p still device memory after cudaFree", p);
  }
}

// A second visible GPU reads and writes the memory (like cudaMalloc memory).
void otherGpu(int device) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count < 2) return;
  int other = (device + 1) % count, can = 0;
  cudaDeviceCanAccessPeer(&can, other, device);
  if (!can) return;
  const std::size_t n = (5u << 20) + 3;
  void *mine = nullptr, *theirs = nullptr;
  CK(cudaMalloc(&mine, n));
  CK(cudaSetDevice(other));
  CK(cudaMalloc(&theirs, n));
  CK(cudaSetDevice(device));
  fill(mine, n, t::seedOf(t::rank(), 500));
  CK(cudaMemcpyPeer(theirs, other, mine, device, n));
  check(theirs, n, t::seedOf(t::rank(), 500), "copied to the other GPU");
  fill(theirs, n, t::seedOf(t::rank(), 501));
  CK(cudaMemcpy(mine, theirs, n, cudaMemcpyDefault));
  check(mine, n, t::seedOf(t::rank(), 501), "copied back from the other GPU");
  CK(cudaFree(theirs));
  CK(cudaFree(mine));
}

// One message of n bytes from `from` to the other rank; `host` puts this rank's side in host
// memory; `p` is this rank's device buffer (at least n + 1 bytes) otherwise.
void message(int from, int peer, int msg, std::size_t n, bool host, void* p) {
  bool sender = t::rank() == from;
  std::uint32_t seed = t::seedOf(from, msg);
  std::vector<std::uint8_t> h(host ? n + 1 : 0);
  if (host) p = h.data();
  if (sender) {
    if (host) for (std::size_t i = 0; i < n; ++i) h[i] = t::pat(seed, i);
    else if (n) fill(p, n, seed);
    MPI_Send(p, static_cast<int>(n), MPI_BYTE, peer, msg, MPI_COMM_WORLD);
    return;
  }
  MPI_Request rq;
  MPI_Status st;
  MPI_Irecv(p, static_cast<int>(n), MPI_BYTE, peer, msg, MPI_COMM_WORLD, &rq);
  MPI_Wait(&rq, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_BYTE, &count);
  T_CHECK(count == static_cast<int>(n), "message %d: count %d of %zu", msg, count, n);
  char what[64];
  std::snprintf(what, sizeof what, "message %d (%zu bytes%s)", msg, n, host ? ", host side" : "");
  if (!host && n) {
    check(p, n, seed, what);
    return;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (h[i] != t::pat(seed, i)) {
      T_CHECK(false, "%s: byte %zu differs", what, i);
      return;
    }
}

// Messages between cudaMalloc buffers (and host ones), both directions: first from one buffer
// kept for all, then from a buffer allocated for each message and freed right after.
void messages(int peer) {
  std::vector<std::size_t> sizes = {0};
  sizes.insert(sizes.end(), std::begin(kSizes), std::end(kSizes));
  void* kept = nullptr;
  CK(cudaMalloc(&kept, sizes.back() + 1));
  int msg = 0;
  for (int fresh = 0; fresh < 2; ++fresh)
    for (std::size_t n : sizes)
      for (int from = 0; from < 2; ++from)
        for (int hostSide = 0; hostSide < 3; ++hostSide) {  // 0: device both, 1: host receives, 2: host sends
          bool sender = t::rank() % 2 == from;
          bool host = (hostSide == 1 && !sender) || (hostSide == 2 && sender);
          void* p = kept;
          if (fresh && !host) CK(cudaMalloc(&p, n + 1));
          message(t::rank() - t::rank() % 2 + from, peer, ++msg, n, host, p);
          if (fresh && !host) CK(cudaFree(p));
          MPI_Barrier(MPI_COMM_WORLD);  // the next allocation follows the peer's free
        }
  CK(cudaFree(kept));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string expect = t::arg(argc, argv, "--expect", "heap");
  bool hookOnly = t::arg(argc, argv, "--hook-only", "no") == "yes";
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  t::setup({{t::Kind::H, t::Kind::H}}, "gpu_heap");  // rank and size only: GPUs are chosen below
  auto mallocFn = static_cast<cudaError_t (*)(void**, size_t)>(&cudaMalloc);
  T_CHECK(ownedByCgdr(reinterpret_cast<void*>(mallocFn)) && ownedByCgdr(reinterpret_cast<void*>(&cudaFree)),
          "cudaMalloc/cudaFree do not resolve to libcgdr.so (preloaded?)");
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (hookOnly) {
    // No GPU here: the entry points must answer as the runtime does, not crash or invent memory.
    void* p = reinterpret_cast<void*>(1);
    cudaError_t m = cudaMalloc(&p, 4096);
    T_CHECK(e != cudaSuccess || count == 0, "--hook-only is for machines without a GPU");
    T_CHECK(m != cudaSuccess, "cudaMalloc without a GPU succeeded");
    T_CHECK(cudaFree(nullptr) == m, "cudaFree(nullptr) without a GPU answered differently from cudaMalloc");
    if (rank == 0) std::printf("no GPU: cudaMalloc answered '%s' through cgdr\n", cudaGetErrorString(m));
    return t::finish("gpu_heap --hook-only");
  }
  int ok = e == cudaSuccess && count > 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (rank == 0) std::printf("SKIP gpu_heap: no usable GPU on this machine (GPU test)\n");
    MPI_Finalize();
    return 77;
  }
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int lrank = 0;
  MPI_Comm_rank(local, &lrank);
  MPI_Comm_free(&local);
  int device = lrank % count;
  CK(cudaSetDevice(device));
  bool heap = expect == "heap";
  allocations(heap, device);
  returned(heap);
  otherGpu(device);
  if (size >= 2 && rank < (size & ~1)) messages(rank ^ 1);
  return t::finish("gpu_heap");
}
