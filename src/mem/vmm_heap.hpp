// The exportable heap: cudaMalloc served from cuMem memory made with the POSIX-fd handle type, so
// a co-located rank in another PID namespace can map the user's buffer and pull it in one copy
// (cudaMalloc memory cannot cross PID namespaces and would take two copies through staging).
// Requests up to 1 MiB share 2 MiB chunks; larger ones get a chunk of their own. A chunk whose
// last range is freed goes back to the driver at once unless it was shared with a peer, which
// keeps a mapping of it until MPI_Finalize: such chunks stay for later allocations.
// interpose/cuda_alloc.cc routes cudaMalloc/cudaFree here (CGDR_CUDA_MALLOC).
#pragma once
#include <cstddef>
#include <string>

namespace cgdr::mem {

// True when cudaMalloc calls are to be served from the heap now (the setting, and for auto
// whether the engine found a peer that needs it).
bool exportableMallocActive();
// auto: the engine found a co-located peer that can reach this rank's GPU memory only through
// cuMem file descriptors; cudaMalloc calls from now on use the heap.
void activateExportableMalloc(const char* why);
// The setting and what it does in this process, in words (cgdr-info, CGDR_STATS).
std::string exportableMallocState();

// n bytes (n > 0) on `device`, or nullptr (the caller falls back to the real cudaMalloc).
void* heapAllocate(std::size_t n, int device);
// The device of the heap range starting at p, or -1 if p is not one.
int heapDeviceOf(const void* p);
// Gives a heap range back (the caller synchronized its device first); false if not one.
bool heapRelease(const void* p);
// The chunk holding p was handed to a peer: keep it when it empties.
void heapMarkShared(const void* p);

struct HeapStats {
  std::size_t served = 0;      // cudaMalloc calls served from the heap
  std::size_t fallbacks = 0;   // calls the heap could not serve (real cudaMalloc instead)
  std::size_t chunks = 0, chunkBytes = 0, sharedChunks = 0, live = 0, liveBytes = 0;
};
HeapStats heapStats();

}  // namespace cgdr::mem
