// cudaMalloc in a program linked with the shared CUDA runtime, with cgdr preloaded: whether the
// allocation comes from cgdr's exportable heap ("--expect heap") or from the runtime ("--expect
// real"), that it behaves like cudaMalloc memory either way (alignment, pointer attributes,
// no overlap between live allocations, every byte kept, usable from a second GPU), that memory
// freed and never shared goes back to the driver, and that messages between such buffers arrive
// byte-exact, also when buffers are freed and allocated again between messages; a count past a
// buffer's end, and with the heap a freed buffer whose chunk stays, are MPI_ERR_BUFFER errors.
// "--alloc async": the same for cudaMallocAsync/cudaFreeAsync (the default stream, a stream of
// the program's and the per-thread default stream, _ptsz), and with the heap, stream order: a
// range freed on a stream that has not passed the free is never handed to another stream, is
// handed back at once to its own stream, and to every stream once it passed; calls during a
// stream capture and on a pool the program made current are the runtime's.
// "--keep 0" (with CGDR_CUDA_MALLOC_ASYNC_KEEP=0): chunks emptied by cudaFreeAsync go back to the
// driver once their stream passed the free.
// "--hook-only": where no GPU is visible (none on the machine, or CUDA_VISIBLE_DEVICES=-1), only that
// the program's cudaMalloc/cudaFree (and cudaMallocAsync/cudaFreeAsync) are cgdr's entry points and
// hand back the runtime's own answer.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "testlib.hpp"

// The per-thread default stream forms (what a program built with --default-stream per-thread calls).
extern "C" cudaError_t cudaMallocAsync_ptsz(void** p, size_t n, cudaStream_t s);
extern "C" cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s);

namespace {

bool gAsync = false;        // --alloc async
cudaStream_t gStream = nullptr;
int gForm = 0;              // which stream the next stream-ordered call uses (cycles)

// cudaMalloc, or cudaMallocAsync on the legacy default stream, a stream of the program's or the
// per-thread default stream in turn; the memory is usable by any stream when it returns.
cudaError_t allocate(void** p, std::size_t n) {
  if (!gAsync) return cudaMalloc(p, n);
  int form = gForm++ % 3;
  cudaError_t e = form == 0 ? cudaMallocAsync(p, n, 0)
                  : form == 1 ? cudaMallocAsync(p, n, gStream)
                              : cudaMallocAsync_ptsz(p, n, 0);
  if (e == cudaSuccess) e = form == 1 ? cudaStreamSynchronize(gStream) : cudaDeviceSynchronize();
  return e;
}

cudaError_t release(void* p) {
  if (!gAsync) return cudaFree(p);
  int form = gForm++ % 3;
  return form == 0 ? cudaFreeAsync(p, 0) : form == 1 ? cudaFreeAsync(p, gStream) : cudaFreeAsync_ptsz(p, 0);
}

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
      CK(allocate(&p, n));
      T_CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0, "allocation of %zu = %p: not 256-byte aligned", n, p);
      cudaPointerAttributes a{};
      CK(cudaPointerGetAttributes(&a, p));
      T_CHECK(a.type == cudaMemoryTypeDevice && a.device == device, "allocation of %zu: type %d device %d", n,
              static_cast<int>(a.type), a.device);
      T_CHECK(exportable(p) == heap, "allocation of %zu: exportable %d, expected %d", n, exportable(p), heap);
      fill(p, n, t::seedOf(t::rank(), idx++, 1));
      live.push_back(p);
    }
  idx = 0;
  for (void* p : live) {
    std::size_t n = kSizes[idx % std::size(kSizes)];
    check(p, n, t::seedOf(t::rank(), idx++, 1), "live allocation kept its bytes");
  }
  for (std::size_t i = 0; i < live.size(); i += 2) CK(release(live[i]));  // holes, then refill them
  for (std::size_t i = 0; i < live.size(); i += 2) {
    CK(allocate(&live[i], kSizes[i % std::size(kSizes)]));
    fill(live[i], kSizes[i % std::size(kSizes)], t::seedOf(t::rank(), static_cast<int>(i), 2));
  }
  for (std::size_t i = 0; i < live.size(); ++i) {
    std::uint32_t seed = t::seedOf(t::rank(), static_cast<int>(i), i % 2 ? 1 : 2);
    check(live[i], kSizes[i % std::size(kSizes)], seed, "after frees and new allocations");
  }
  for (void* p : live) CK(release(p));
  CK(cudaFree(nullptr));
  void* none = reinterpret_cast<void*>(1);
  T_CHECK(cudaMalloc(&none, 0) == cudaSuccess, "cudaMalloc(0) failed");
  T_CHECK(cudaMallocAsync(&none, 0, gStream) == cudaSuccess, "cudaMallocAsync(0) failed");
  CK(cudaStreamSynchronize(gStream));
}

// Memory never handed to a peer goes back to the driver when freed: its addresses are no longer
// device memory (cudaMemGetInfo would not tell: other processes share the GPU).
bool deviceMemory(void* p) {
  cudaPointerAttributes a{};
  cudaError_t e = cudaPointerGetAttributes(&a, p);
  (void)cudaGetLastError();
  return e == cudaSuccess && a.type == cudaMemoryTypeDevice;
}

void returned(bool heap, bool keep) {
  std::vector<void*> ps(8);
  for (void*& p : ps) CK(allocate(&p, 32u << 20));
  for (void* p : ps) CK(release(p));
  if (!heap) return;  // the runtime may keep freed memory mapped for reuse
  if (gAsync) {
    // Freed in stream order: once every stream passed the frees, the next allocation takes them
    // back; the chunks stay mapped (kept for reuse), or with CGDR_CUDA_MALLOC_ASYNC_KEEP=0 go back
    // to the driver. The small allocation below only triggers that (its own chunk is 2 MiB).
    CK(cudaDeviceSynchronize());
    void* trigger = nullptr;
    CK(cudaMallocAsync(&trigger, 256, gStream));
    for (void* p : ps) {
      auto d = static_cast<char*>(p) - static_cast<char*>(trigger);
      bool near = d > -(2 << 20) && d < (2 << 20);  // the trigger's chunk may reuse the address
      if (keep) T_CHECK(deviceMemory(p), "heap: %p freed by cudaFreeAsync was not kept", p);
      else T_CHECK(near || !deviceMemory(p), "heap: %p still device memory with nothing kept", p);
    }
    CK(cudaFreeAsync(trigger, gStream));
    CK(cudaStreamSynchronize(gStream));
    if (!keep) return;
    std::vector<void*> again(ps.size());
    for (void*& p : again) CK(cudaMallocAsync(&p, 32u << 20, gStream));
    CK(cudaStreamSynchronize(gStream));
    for (void* p : ps) {
      bool found = false;
      for (void* q : again) found = found || q == p;
      T_CHECK(found, "heap: a 32 MiB range kept after cudaFreeAsync was not handed out again");
    }
    for (void* p : again) CK(cudaFreeAsync(p, gStream));
    CK(cudaStreamSynchronize(gStream));
    return;
  }
  for (void* p : ps) T_CHECK(!deviceMemory(p), "heap: %p still device memory after cudaFree", p);
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
  CK(allocate(&mine, n));
  CK(cudaSetDevice(other));
  // (gStream is of the first GPU: the default stream allocates on the current one)
  CK(gAsync ? cudaMallocAsync(&theirs, n, 0) : cudaMalloc(&theirs, n));
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(device));
  fill(mine, n, t::seedOf(t::rank(), 500));
  CK(cudaMemcpyPeer(theirs, other, mine, device, n));
  check(theirs, n, t::seedOf(t::rank(), 500), "copied to the other GPU");
  fill(theirs, n, t::seedOf(t::rank(), 501));
  CK(cudaMemcpy(mine, theirs, n, cudaMemcpyDefault));
  check(mine, n, t::seedOf(t::rank(), 501), "copied back from the other GPU");
  CK(gAsync ? cudaFreeAsync(theirs, 0) : cudaFree(theirs));
  CK(release(mine));
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
  CK(allocate(&kept, sizes.back() + 1));
  int msg = 0;
  for (int fresh = 0; fresh < 2; ++fresh)
    for (std::size_t n : sizes)
      for (int from = 0; from < 2; ++from)
        for (int hostSide = 0; hostSide < 3; ++hostSide) {  // 0: device both, 1: host receives, 2: host sends
          bool sender = t::rank() % 2 == from;
          bool host = (hostSide == 1 && !sender) || (hostSide == 2 && sender);
          void* p = kept;
          if (fresh && !host) CK(allocate(&p, n + 1));
          message(t::rank() - t::rank() % 2 + from, peer, ++msg, n, host, p);
          if (fresh && !host) CK(release(p));
          MPI_Barrier(MPI_COMM_WORLD);  // the next allocation follows the peer's free
        }
  CK(release(kept));
}

// A count past the end of a cudaMalloc buffer is an MPI error naming the cause, also where cgdr's
// heap serves it (the driver sees only the heap's chunk, which goes on behind the buffer); with the
// heap, a buffer freed while its chunk stays (the next buffer lives in it) is refused as freed.
void badBuffers(bool heap) {
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const std::size_t n = 4096;  // a multiple of the heap's 256-byte rounding: no slack behind it
  void *a = nullptr, *b = nullptr;
  CK(allocate(&a, n));
  CK(allocate(&b, n));
  std::string s;
  auto refused = [&](int rc, const char* cause, const char* what, std::size_t bytes) {
    T_CHECK(t::refusedWith(rc, cause, &s), "%s of %zu bytes: \"%s\"", what, bytes, s.c_str());
  };
  int peer = t::rank() ^ 1;
  t::RefusedSends drains(peer, {90, 90, 92}, 2 * n);
  for (std::size_t over : {std::size_t{1}, std::size_t{300}}) {
    refused(MPI_Send(a, static_cast<int>(n + over), MPI_BYTE, peer, 90, MPI_COMM_WORLD), "runs past the end",
            "send", n + over);
    MPI_Request r = MPI_REQUEST_NULL;
    refused(MPI_Irecv(static_cast<char*>(b) + 100, static_cast<int>(n - 100 + over), MPI_BYTE, peer, 91,
                      MPI_COMM_WORLD, &r),
            "runs past the end", "receive", n - 100 + over);
    T_CHECK(r == MPI_REQUEST_NULL, "a refused receive left a request");
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  CK(release(a));
  if (heap && !gAsync) {  // (a stream-ordered free gives the range back later)
    CK(cudaDeviceSynchronize());
    // Side by side, b keeps their chunk mapped: to the driver a is still device memory, only the
    // heap knows better.
    auto ua = reinterpret_cast<std::uintptr_t>(a), ub = reinterpret_cast<std::uintptr_t>(b);
    bool oneChunk = ub == ua + n || ua == ub + n;
    T_CHECK(!oneChunk || deviceMemory(a), "the freed buffer's chunk went back to the driver (b lives in it)");
    if (t::rank() == 0)
      std::printf("freed buffer: %s\n", oneChunk ? "its chunk stays mapped (the heap tells)" : "not beside the next one");
    refused(MPI_Send(a, 16, MPI_BYTE, peer, 92, MPI_COMM_WORLD), "freed or foreign", "send from a freed buffer", 16);
  }
  drains.check("bad buffers");
  CK(release(b));
  CK(cudaDeviceSynchronize());
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

// A stream held back by a host function until released (its work after that waits).
struct Gate {
  std::atomic<bool> open{false};
  static void CUDART_CB wait(void* g) {
    auto* self = static_cast<Gate*>(g);
    while (!self->open.load()) std::this_thread::yield();
  }
};

// Stream order of the heap (--alloc async, --expect heap).
void streamOrder(int device, bool keep) {
  const std::size_t n = (3u << 20) + 77;  // a chunk of its own
  cudaStream_t a = nullptr, b = nullptr;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  // Page-locked (a copy from pageable memory would wait for the gated stream), and allocated
  // before the gate (allocating page-locked memory may wait for the device).
  std::uint8_t* h = nullptr;
  CK(cudaMallocHost(&h, n));
  Gate gate;
  void *x = nullptr, *y = nullptr;
  CK(cudaMallocAsync(&x, n, a));
  CK(cudaMemsetAsync(x, 0x5a, n, a));
  CK(cudaLaunchHostFunc(a, &Gate::wait, &gate));  // a cannot pass what follows
  CK(cudaMemsetAsync(x, 0xa5, n, a));             // still uses x after the gate
  CK(cudaFreeAsync(x, a));
  CK(cudaMallocAsync(&y, n, b));
  T_CHECK(y != x, "a range freed on a stream that has not passed the free went to another stream");
  void* z = nullptr;
  CK(cudaMallocAsync(&z, n, a));
  T_CHECK(z == x, "a range freed on a stream was not handed back to that stream in stream order (%p, %p)", z, x);
  for (std::size_t i = 0; i < n; ++i) h[i] = t::pat(t::seedOf(t::rank(), 900), i);
  CK(cudaMemcpyAsync(z, h, n, cudaMemcpyHostToDevice, a));  // after the 0xa5 memset
  gate.open = true;
  CK(cudaStreamSynchronize(a));
  CK(cudaFreeHost(h));
  check(z, n, t::seedOf(t::rank(), 900), "range reused on its own stream");
  // Once the stream passed the free, another stream gets the range.
  CK(cudaFreeAsync(z, a));
  CK(cudaStreamSynchronize(a));
  void* w = nullptr;
  CK(cudaMallocAsync(&w, n, b));
  // (with nothing kept, the chunk went back to the driver)
  if (keep) T_CHECK(w == x, "a range whose stream passed its free was not handed out again (%p, %p)", w, x);
  T_CHECK(cudaFreeAsync(w, b) == cudaSuccess && cudaFreeAsync(w, b) == cudaErrorInvalidValue,
          "a second cudaFreeAsync of one range was not refused");
  (void)cudaGetLastError();
  CK(cudaFreeAsync(y, b));
  CK(cudaStreamSynchronize(b));

  // In a stream capture: the runtime's own graph allocation, and a heap range freed in it is kept.
  void *heap = nullptr, *g = nullptr;
  CK(cudaMallocAsync(&heap, 4096, b));
  CK(cudaStreamSynchronize(b));
  T_CHECK(exportable(heap), "cudaMallocAsync(4096) did not come from the heap");
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CK(cudaStreamBeginCapture(b, cudaStreamCaptureModeThreadLocal));
  auto active = [b](const char* after) {
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    CK(cudaStreamIsCapturing(b, &st));
    T_CHECK(st == cudaStreamCaptureStatusActive, "the capture is no longer active after %s (status %d)", after,
            static_cast<int>(st));
  };
  active("cudaStreamBeginCapture");
  CK(cudaMallocAsync(&g, 8192, b));
  active("cudaMallocAsync");
  CK(cudaMemsetAsync(g, 1, 8192, b));
  CK(cudaFreeAsync(g, b));
  CK(cudaFreeAsync(heap, b));
  active("cudaFreeAsync of a heap range");
  CK(cudaStreamEndCapture(b, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  CK(cudaGraphLaunch(exec, b));
  CK(cudaGraphLaunch(exec, b));
  CK(cudaStreamSynchronize(b));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  T_CHECK(!exportable(g), "an allocation in a stream capture came from the heap");

  // A pool the program made current: its own.
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr, def = nullptr;
  CK(cudaMemPoolCreate(&pool, &props));
  CK(cudaDeviceGetDefaultMemPool(&def, device));
  CK(cudaDeviceSetMemPool(device, pool));
  void* own = nullptr;
  CK(cudaMallocAsync(&own, 1u << 20, b));
  CK(cudaStreamSynchronize(b));
  T_CHECK(!exportable(own), "cudaMallocAsync on the program's own pool came from the heap");
  CK(cudaFreeAsync(own, b));
  CK(cudaStreamSynchronize(b));
  CK(cudaDeviceSetMemPool(device, def));
  CK(cudaMemPoolDestroy(pool));
  CK(cudaStreamDestroy(a));
  CK(cudaStreamDestroy(b));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  std::string expect = t::arg(argc, argv, "--expect", "heap");
  bool hookOnly = t::arg(argc, argv, "--hook-only", "no") == "yes";
  gAsync = t::arg(argc, argv, "--alloc", "sync") == "async";
  bool keep = t::arg(argc, argv, "--keep", "yes") != "0";
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  t::setup({{t::Kind::H, t::Kind::H}}, "gpu_heap");  // rank and size only: GPUs are chosen below
  auto mallocFn = static_cast<cudaError_t (*)(void**, size_t)>(&cudaMalloc);
  T_CHECK(ownedByCgdr(reinterpret_cast<void*>(mallocFn)) && ownedByCgdr(reinterpret_cast<void*>(&cudaFree)),
          "cudaMalloc/cudaFree do not resolve to libcgdr.so (preloaded?)");
  auto mallocAsyncFn = static_cast<cudaError_t (*)(void**, size_t, cudaStream_t)>(&cudaMallocAsync);
  T_CHECK(ownedByCgdr(reinterpret_cast<void*>(mallocAsyncFn)) && ownedByCgdr(reinterpret_cast<void*>(&cudaFreeAsync)) &&
              ownedByCgdr(reinterpret_cast<void*>(&cudaMallocAsync_ptsz)) &&
              ownedByCgdr(reinterpret_cast<void*>(&cudaFreeAsync_ptsz)),
          "cudaMallocAsync/cudaFreeAsync (or their _ptsz forms) do not resolve to libcgdr.so");
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (hookOnly) {
    // No GPU here: the entry points must answer as the runtime does, not crash or invent memory.
    void* p = reinterpret_cast<void*>(1);
    cudaError_t m = cudaMalloc(&p, 4096);
    T_CHECK(e != cudaSuccess || count == 0,
            "--hook-only is for a process that sees no GPU (CUDA_VISIBLE_DEVICES=-1)");
    T_CHECK(m != cudaSuccess, "cudaMalloc without a GPU succeeded");
    T_CHECK(cudaFree(nullptr) == m, "cudaFree(nullptr) without a GPU answered differently from cudaMalloc");
    void* q = reinterpret_cast<void*>(1);
    T_CHECK(cudaMallocAsync(&q, 4096, 0) != cudaSuccess, "cudaMallocAsync without a GPU succeeded");
    T_CHECK(cudaMallocAsync_ptsz(&q, 4096, 0) != cudaSuccess, "cudaMallocAsync_ptsz without a GPU succeeded");
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
  CK(cudaStreamCreate(&gStream));
  allocations(heap, device);
  returned(heap, keep);
  if (heap || !gAsync) otherGpu(device);  // (the runtime's pool grants no peer GPU access by itself)
  if (gAsync && heap) streamOrder(device, keep);
  if (size >= 2 && rank < (size & ~1)) {
    messages(rank ^ 1);
    badBuffers(heap);
  }
  CK(cudaStreamDestroy(gStream));
  return t::finish(gAsync ? "gpu_heap --alloc async" : "gpu_heap");
}
