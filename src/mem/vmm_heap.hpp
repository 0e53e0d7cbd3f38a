// The exportable heap: cudaMalloc served from cuMem memory made with the POSIX-fd handle type, so
// a co-located rank in another PID namespace can map the user's buffer and pull it in one copy
// (cudaMalloc memory cannot cross PID namespaces and would take two copies through staging).
// Requests up to 1 MiB share 2 MiB chunks; larger ones get a chunk of their own. A chunk whose
// last range is freed goes back to the driver at once unless it was shared with a peer, which
// keeps a mapping of it until MPI_Finalize: such chunks stay for later allocations.
// interpose/cuda_alloc.cc routes cudaMalloc/cudaFree here (CGDR_CUDA_MALLOC), and the
// stream-ordered cudaMallocAsync/cudaFreeAsync on the device's default pool (CGDR_CUDA_MALLOC_ASYNC):
// a pool allocation has neither a legacy IPC handle nor a file descriptor, so without the heap no
// peer, in any namespace, can map it. Chunks emptied by cudaFreeAsync are kept for later
// allocations, as a pool keeps its memory (CGDR_CUDA_MALLOC_ASYNC_KEEP), and trimmed when the
// driver refuses a new chunk.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/cuda.hpp"

namespace cgdr::mem {

// True when cudaMalloc calls are to be served from the heap now (the setting, and for auto
// whether the engine found a peer that needs it).
bool exportableMallocActive();
// auto: the engine found a co-located peer that can reach this rank's GPU memory only through
// cuMem file descriptors; cudaMalloc calls from now on use the heap.
void activateExportableMalloc(const char* why);
// The setting and what it does in this process, in words (cgdr-info, CGDR_STATS).
std::string exportableMallocState();

// The same for cudaMallocAsync: the setting, and for auto whether the engine found a co-located
// peer that maps GPU memory through cuMem file descriptors.
bool exportableAsyncActive();
void activateExportableAsync(const char* why);
std::string exportableAsyncState();

// n bytes (n > 0) on `device`, from a new chunk where none has room and mayGrow (idle chunks are
// trimmed and the request tried again where the driver refuses one), or nullptr (the caller falls
// back to the real allocator, or without mayGrow first gets ranges back). async: counted as a
// cudaMallocAsync.
void* heapAllocate(std::size_t n, int device, bool async = false, bool mayGrow = true);
// The device of the heap range starting at p, or -1 if p is not one; its size (a multiple of
// ChunkRanges::kAlign) in *size.
int heapRangeOf(const void* p, std::size_t* size);
// Where an address lies in the heap (heapHolding).
struct HeapPlace {
  int where = 0;             // 1 in a live range, -1 in a chunk but in no live range, 0 not the heap
  std::uintptr_t start = 0;  // where > 0: the range handed out (what cudaMalloc gave the program,
  std::size_t size = 0;      //   where the driver sees only the chunk around it)
  // where > 0: the driver's answers for the chunk holding it, asked once when the chunk was made
  // (type kUnknown: the driver could not say; classify then asks it).
  base::cuda::PointerAttrs driver;
};
// Where p lies in the heap (returns place->where): -1 is memory the program freed, or never got.
// Without the heap's lock before its first chunk, and where the thread's last answer still holds
// (nothing in the heap changed since). A chunk's driver view holds for its life: the heap alone
// unmaps its chunks, and any change to them is a change of the heap.
int heapHolding(const void* p, HeapPlace* place);
// Gives a heap range back (the caller made sure no GPU work uses it any more); false if not one.
// keep (cudaFreeAsync): a chunk it empties stays for later requests while the idle chunks stay
// within CGDR_CUDA_MALLOC_ASYNC_KEEP; else it goes back to the driver at once.
bool heapRelease(const void* p, bool keep = false);
// A cudaFreeAsync whose range waits for its stream (deferred) / was freed in a stream capture
// and is kept until MPI_Finalize (cannot be ordered after the graph's work).
void heapCountDeferred(bool captured);
// A cudaMallocAsync served by a range freed on its stream, handed out again as it was.
void heapCountReused();
// The chunk holding p was handed to a peer: keep it when it empties.
void heapMarkShared(const void* p);

struct HeapStats {
  std::size_t served = 0;      // cudaMalloc calls served from the heap
  std::size_t asyncServed = 0; // cudaMallocAsync calls served from the heap
  std::size_t fallbacks = 0;   // calls the heap could not serve (real cudaMalloc instead)
  std::size_t deferred = 0;    // cudaFreeAsync ranges that waited for their stream
  std::size_t reused = 0;      // of asyncServed: a range freed on the same stream, as it was
  std::size_t captured = 0;    // cudaFreeAsync in a stream capture: range kept
  std::size_t trimmed = 0;     // idle chunks given back (over the keep limit, or the driver refused one)
  std::size_t chunks = 0, chunkBytes = 0, sharedChunks = 0, live = 0, liveBytes = 0, idleChunks = 0, idleBytes = 0;
};
HeapStats heapStats();

}  // namespace cgdr::mem
