#include "mem/copy_graph.hpp"

#include <algorithm>

#include "base/config.hpp"
#include "base/log.hpp"

#if CGDR_HAVE_CUDA
namespace cgdr::mem {
namespace {

base::Setting<long long> gGraphs("CGDR_CUDA_COPY_GRAPHS", "128", "graphs",
                                 "Copy graphs kept per GPU and copy stream (CGDR_CUDA_GRAPH_COPY), each ~110 KiB of GPU "
                                 "memory: a copy repeating one of them (same buffers, addresses, size) is issued "
                                 "~2 us faster than a new one.",
                                 base::IntRange{1, 4096});

std::size_t graphsPerStream() {
  static const std::size_t n = static_cast<std::size_t>(gGraphs.get());  // (1 to 4096: its range)
  return n;
}

}  // namespace

std::size_t CopyGraphs::KeyHash::operator()(const Key& k) const {
  std::uint64_t h = reinterpret_cast<std::uintptr_t>(k.dst) * 0x9e3779b97f4a7c15ull;
  h ^= reinterpret_cast<std::uintptr_t>(k.src) * 0xc2b2ae3d27d4eb4full + (h >> 29);
  h ^= k.n * 0x165667b19e3779f9ull + (h >> 31);
  return static_cast<std::size_t>(h ^ (h >> 32));
}

// A new graph for the copy (nullptr where CUDA refuses; the first refusal marks the stream's
// graphs broken).
CopyGraphs::Graph* CopyGraphs::add(void* dst, const void* src, std::size_t n, int device) {
  Graph ng;
  cudaError_t e = cudaGraphCreate(&ng.graph, 0);
  if (e == cudaSuccess) e = cudaGraphAddMemcpyNode1D(&ng.node, ng.graph, nullptr, 0, dst, src, n, cudaMemcpyDefault);
  if (e == cudaSuccess) e = cudaGraphInstantiate(&ng.exec, ng.graph, 0);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    if (ng.graph) cudaGraphDestroy(ng.graph);
    if (g_.empty()) {
      CGDR_LOG(kInfo, kCuda, "copy graph on GPU %d unavailable (%s): plain copies", device, cudaGetErrorString(e));
      broken_ = true;
    }
    return nullptr;
  }
  if (g_.empty()) g_.reserve(graphsPerStream());  // (never moved: its graphs stay where they are)
  g_.push_back(ng);
  return &g_.back();
}

GraphLaunch CopyGraphs::launch(void* dst, const void* src, std::size_t n, CopyIds ids, int device, cudaStream_t s) {
  if (broken_) return GraphLaunch::kRefused;
  const Key key{dst, src, n};
  Graph* g = nullptr;
  auto it = at_.find(key);
  if (it != at_.end()) g = &g_[it->second];  // this copy before (its allocations may be new)
  bool repeated = g && g->exec && ids.dst && ids.src && g->ids.dst == ids.dst && g->ids.src == ids.src &&
                  Key{g->dst, g->src, g->n} == key;
  bool fresh = false;
  if (!g && g_.size() < graphsPerStream()) {
    g = add(dst, src, n, device);
    if (!g) return GraphLaunch::kRefused;
    fresh = true;
  } else if (!g) {
    victim_ ^= victim_ << 13;
    victim_ ^= victim_ >> 7;
    victim_ ^= victim_ << 17;
    g = &g_[victim_ % g_.size()];
  }
  cudaError_t e = cudaSuccess;
  if (!repeated && !fresh) e = cudaGraphExecMemcpyNodeSetParams1D(g->exec, g->node, dst, src, n, cudaMemcpyDefault);
  if (e == cudaSuccess) e = cudaGraphLaunch(g->exec, s);
  if (e != cudaSuccess) {  // e.g. memory of another context than the graph was made with
    (void)cudaGetLastError();
    g->ids = CopyIds{};  // its parameters may be neither the old copy's nor this one's: re-point it next time
    if (++refusals_ >= 16) {
      CGDR_LOG(kInfo, kCuda, "copy graph on GPU %d refuses copies (%s): plain copies", device, cudaGetErrorString(e));
      broken_ = true;
    }
    return GraphLaunch::kRefused;
  }
  refusals_ = 0;
  auto index = static_cast<std::size_t>(g - g_.data());
  const Key was{g->dst, g->src, g->n};
  if (!fresh && !(was == key)) {
    auto old = at_.find(was);
    if (old != at_.end() && old->second == index) at_.erase(old);
  }
  at_[key] = index;
  g->dst = dst;
  g->src = src;
  g->n = n;
  g->ids = ids;
  return repeated ? GraphLaunch::kRepeated : GraphLaunch::kLaunched;
}

}  // namespace cgdr::mem
#endif
