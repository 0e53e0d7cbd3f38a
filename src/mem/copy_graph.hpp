// One copy stream's CUDA graphs of a single copy node each (GpuCopy's Issue::kGraph and
// kGraphLanes, mem/gpu_copy.hpp): up to CGDR_CUDA_COPY_GRAPHS graphs, found by the copy's
// (destination, source, size). A copy whose two sides are the same allocations (CopyIds),
// addresses and size as an earlier one launches that graph as it is; any other takes a new graph
// while fewer exist, else re-points one taken at random (cudaGraphExecMemcpyNodeSetParams1D, which
// resolves the pointers again: ~2 us more to issue on an H100 than a repeat, as much as the graph
// saves over cudaMemcpyAsync). A program's buffers used in turn (a ring of messages, PyTorch's
// cached blocks) repeat their copies: 64 buffers a side in a ping-pong on one GPU are 128 copies of
// one stream (each rank's push and pull), and with 4 graphs every copy was re-pointed. At random,
// not the least recently used: a cycle of more copies than graphs would evict each graph just
// before its copy comes again. Each graph holds ~110 KiB of GPU memory (H100: 22 MiB for 200),
// hence a bound. A launch already queued keeps the parameters it was launched with.
#pragma once
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "mem/gpu_copy.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>

namespace cgdr::mem {

enum class GraphLaunch { kRefused, kLaunched, kRepeated };

class CopyGraphs {  // a stream's; used with that stream's issue lock held
 public:
  // Puts the copy on `s` (a stream of `device`, which is current) through one of the graphs:
  // kRepeated where it repeated a graph's copy as it was, kRefused where the graph cannot take it
  // (nothing was queued then; the caller issues a plain copy).
  GraphLaunch launch(void* dst, const void* src, std::size_t n, CopyIds ids, int device, cudaStream_t s);

 private:
  struct Graph {
    cudaGraph_t graph = nullptr;
    cudaGraphNode_t node = nullptr;
    cudaGraphExec_t exec = nullptr;
    void* dst = nullptr;
    const void* src = nullptr;
    std::size_t n = 0;
    CopyIds ids;  // both non-zero: the copy may be repeated without re-pointing
  };
  struct Key {
    void* dst;
    const void* src;
    std::size_t n;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };
  Graph* add(void* dst, const void* src, std::size_t n, int device);

  std::vector<Graph> g_;                          // never more than CGDR_CUDA_COPY_GRAPHS
  std::unordered_map<Key, std::size_t, KeyHash> at_;  // each graph's copy -> its index in g_
  std::uint64_t victim_ = 0x2545f4914f6cdd1dull;  // xorshift state choosing the graph to re-point
  bool broken_ = false;                           // cannot be built here: plain copies only
  int refusals_ = 0;                              // consecutive copies it would not take
};

}  // namespace cgdr::mem
#endif
