#include "mem/gpu_copy.hpp"

#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/log.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::mem {
namespace {
std::atomic<unsigned long long> gGraphCopies{0}, gRepeatedCopies{0}, gPlainCopies{0}, gAsked{0}, gInferred{0};
}  // namespace

CopyCounts copyCounts() {
  return {gGraphCopies.load(std::memory_order_relaxed), gRepeatedCopies.load(std::memory_order_relaxed),
          gPlainCopies.load(std::memory_order_relaxed), gAsked.load(std::memory_order_relaxed),
          gInferred.load(std::memory_order_relaxed)};
}

#if CGDR_HAVE_CUDA
namespace {

constexpr int kMaxDevices = 64;

base::ChoiceSetting gGraph("CGDR_CUDA_GRAPH_COPY", "auto", {"auto", "off", "always"},
                           "How GPU-to-GPU copies are issued. auto: through a CUDA graph re-pointed per copy where "
                           "the other side is on the same GPU or on a GPU this process cannot see (e.g. a container "
                           "that sees only its own GPU), where cudaMemcpyAsync costs ~2 us more to issue; "
                           "cudaMemcpyAsync between two visible GPUs. off: always cudaMemcpyAsync; always: always "
                           "the graph.");
enum { kGraphAuto, kGraphOff, kGraphAlways };

// Per (device, direction), a few graphs of one copy node each. A copy whose two sides are the
// same allocations, addresses and size as an earlier one (identified by the caller) launches that
// graph as it is; any other takes the least recently used graph and re-points it first
// (cudaGraphExecMemcpyNodeSetParams1D, which resolves the pointers again). A launch already
// queued keeps the parameters it was launched with.
constexpr int kGraphsPerStream = 4;

struct CopyGraph {
  cudaGraph_t graph = nullptr;
  cudaGraphNode_t node = nullptr;
  cudaGraphExec_t exec = nullptr;
  void* dst = nullptr;
  const void* src = nullptr;
  std::size_t n = 0;
  CopyIds ids;  // both non-zero: the copy may be repeated without re-pointing
  std::uint64_t used = 0;
};

struct GraphCopy {  // used with its stream's Order::issue held
  CopyGraph g[kGraphsPerStream];
  int count = 0;
  std::uint64_t clock = 0;
  bool broken = false;  // cannot be built here: plain copies only
  int refusals = 0;     // consecutive copies it would not take
};

// Per stream, what is known of its copies in order: `issued` counts the copies put on it (a
// copy's place, taken with its event recorded under `issue`, so places follow stream order;
// `issue` also guards the stream's copy graphs);
// every copy up to `doneUpTo` has finished (raised where a copy's event or the whole stream was
// seen done).
struct Order {
  std::mutex issue;
  std::atomic<std::uint64_t> issued{0}, doneUpTo{0};
};

struct Streams {
  std::mutex mutex;
  cudaStream_t s[kMaxDevices][4] = {};
  GraphCopy graphs[kMaxDevices][4];
  Order order[kMaxDevices][4];
  std::vector<cudaEvent_t> events;
};

void raise(std::atomic<std::uint64_t>& a, std::uint64_t v) {
  std::uint64_t cur = a.load(std::memory_order_relaxed);
  while (cur < v && !a.compare_exchange_weak(cur, v, std::memory_order_release, std::memory_order_relaxed)) {
  }
}

Streams& streams() {
  static Streams* s = new Streams;  // outlives static destructors; the driver cleans up at exit
  return *s;
}

base::Status cudaFail(const char* what, cudaError_t e) {
  (void)cudaGetLastError();
  std::string m = std::string(what) + ": " + cudaGetErrorString(e);
  CGDR_LOG(kError, kCuda, "%s", m.c_str());
  return base::Status(base::Errc::kCuda, m);
}

int normalize(int device) {
  if (device >= 0 && device < kMaxDevices) return device;
  int cur = 0;
  cudaGetDevice(&cur);
  return cur;
}

// The stream for (device, direction); created on first use with the device current.
base::Result<cudaStream_t> streamFor(int device, CopyDir dir) {
  Streams& st = streams();
  std::lock_guard lock(st.mutex);
  cudaStream_t& s = st.s[device][static_cast<int>(dir)];
  if (!s) {
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess) return cudaFail("cudaStreamCreateWithFlags", e);
  }
  return s;
}

base::Result<cudaEvent_t> takeEvent() {
  Streams& st = streams();
  {
    std::lock_guard lock(st.mutex);
    if (!st.events.empty()) {
      cudaEvent_t e = st.events.back();
      st.events.pop_back();
      return e;
    }
  }
  cudaEvent_t ev;
  cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (e != cudaSuccess) return cudaFail("cudaEventCreate", e);
  return ev;
}

void giveEvent(cudaEvent_t ev) {
  Streams& st = streams();
  std::lock_guard lock(st.mutex);
  st.events.push_back(ev);
}

bool same(const CopyGraph& g, void* dst, const void* src, std::size_t n, CopyIds ids) {
  return g.exec && ids.dst && ids.src && g.ids.dst == ids.dst && g.ids.src == ids.src && g.dst == dst &&
         g.src == src && g.n == n;
}

// Puts the copy on `s` through one of the (device, dir) graphs; false where the graph cannot
// take it (nothing was queued then; the caller issues a plain copy). The caller holds the
// stream's Order::issue, which also guards its graphs.
bool graphCopy(void* dst, const void* src, std::size_t n, int device, CopyDir dir, CopyIds ids, cudaStream_t s) {
  GraphCopy& gc = streams().graphs[device][static_cast<int>(dir)];
  if (gc.broken) return false;
  CopyGraph* g = nullptr;
  for (int i = 0; i < gc.count && !g; ++i)
    if (same(gc.g[i], dst, src, n, ids)) g = &gc.g[i];
  cudaError_t e = cudaSuccess;
  bool repeated = g != nullptr;
  if (!g && gc.count < kGraphsPerStream) {  // a new graph, made for this copy
    CopyGraph& ng = gc.g[gc.count];
    e = cudaGraphCreate(&ng.graph, 0);
    if (e == cudaSuccess) e = cudaGraphAddMemcpyNode1D(&ng.node, ng.graph, nullptr, 0, dst, src, n, cudaMemcpyDefault);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&ng.exec, ng.graph, 0);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      if (ng.graph) cudaGraphDestroy(ng.graph);
      ng = CopyGraph{};
      if (gc.count == 0) {
        CGDR_LOG(kInfo, kCuda, "copy graph on GPU %d unavailable (%s): plain copies", device, cudaGetErrorString(e));
        gc.broken = true;
      }
      return false;
    }
    ++gc.count;
    g = &ng;
  } else if (!g) {  // re-point the least recently used one
    g = &gc.g[0];
    for (int i = 1; i < gc.count; ++i)
      if (gc.g[i].used < g->used) g = &gc.g[i];
    e = cudaGraphExecMemcpyNodeSetParams1D(g->exec, g->node, dst, src, n, cudaMemcpyDefault);
    if (e != cudaSuccess) g->ids = CopyIds{};  // its old parameters may not hold any more
  }
  if (e == cudaSuccess) e = cudaGraphLaunch(g->exec, s);
  if (e != cudaSuccess) {  // e.g. memory of another context than the graph was made with
    (void)cudaGetLastError();
    if (++gc.refusals >= 16) {
      CGDR_LOG(kInfo, kCuda, "copy graph on GPU %d refuses copies (%s): plain copies", device, cudaGetErrorString(e));
      gc.broken = true;
    }
    return false;
  }
  gc.refusals = 0;
  if (repeated) gRepeatedCopies.fetch_add(1, std::memory_order_relaxed);
  g->dst = dst;
  g->src = src;
  g->n = n;
  g->ids = ids;
  g->used = ++gc.clock;
  return true;
}

}  // namespace

DeviceScope::DeviceScope(int device) {
  if (device < 0 || cudaGetDevice(&saved_) != cudaSuccess) {
    saved_ = -1;
    return;
  }
  if (saved_ == device) saved_ = -1;
  else cudaSetDevice(device);
}

DeviceScope::~DeviceScope() {
  if (saved_ >= 0) cudaSetDevice(saved_);
}

GpuCopy& GpuCopy::operator=(GpuCopy&& o) noexcept {
  if (this != &o) {
    if (event_) (void)wait();
    event_ = o.event_;
    stream_ = o.stream_;
    seq_ = o.seq_;
    error_ = std::move(o.error_);
    o.event_ = nullptr;
  }
  return *this;
}

void GpuCopy::release() {
  giveEvent(static_cast<cudaEvent_t>(event_));
  event_ = nullptr;
}

GpuCopy::~GpuCopy() {
  if (event_) (void)wait();
}

base::Status GpuCopy::start(void* dst, const void* src, std::size_t n, int device, CopyDir dir, Issue issue,
                            CopyIds ids) {
  if (n == 0) return base::Status::ok();
  device = normalize(device);
  DeviceScope scope(device);
  auto s = streamFor(device, dir);
  if (!s.isOk()) return s.status();
  auto ev = takeEvent();
  if (!ev.isOk()) return ev.status();
  int mode = gGraph.get().index;
  bool viaGraph = (dir == CopyDir::kPeer || dir == CopyDir::kStage) && mode != kGraphOff &&
                  (issue == Issue::kGraph || mode == kGraphAlways);
  Order& order = streams().order[device][static_cast<int>(dir)];
  std::lock_guard issuing(order.issue);
  cudaError_t e = cudaSuccess;
  if (viaGraph && graphCopy(dst, src, n, device, dir, ids, s.value())) {
    gGraphCopies.fetch_add(1, std::memory_order_relaxed);
  } else {
    e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s.value());
    gPlainCopies.fetch_add(1, std::memory_order_relaxed);
  }
  if (e != cudaSuccess) {
    giveEvent(ev.value());
    return cudaFail(dir == CopyDir::kToHost ? "copy from GPU" : dir == CopyDir::kToDevice ? "copy to GPU" : "GPU to GPU copy", e);
  }
  e = cudaEventRecord(ev.value(), s.value());
  if (e != cudaSuccess) {
    giveEvent(ev.value());
    return cudaFail("cudaEventRecord", e);
  }
  event_ = ev.value();
  stream_ = device * 4 + static_cast<int>(dir);
  seq_ = order.issued.fetch_add(1, std::memory_order_release) + 1;
  return base::Status::ok();
}

bool GpuCopy::done(PollPass* pass) {
  if (!event_) return true;
  Order* order = nullptr;
  if (stream_ >= 0) {
    order = &streams().order[stream_ / 4][stream_ % 4];
    if (seq_ <= order->doneUpTo.load(std::memory_order_acquire)) {  // a later copy was seen done
      gInferred.fetch_add(1, std::memory_order_relaxed);
      release();
      return true;
    }
    if (pass && pass->knownPending(stream_, seq_)) {  // an earlier one was not
      gInferred.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  }
  gAsked.fetch_add(1, std::memory_order_relaxed);
  cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (e == cudaErrorNotReady) {
    if (pass && stream_ >= 0) pass->notePending(stream_, seq_);
    return false;
  }
  if (e != cudaSuccess) {
    error_ = cudaFail("copy", e);
  } else if (order) {
    raise(order->doneUpTo, seq_);
    // The second copy of this stream done in one pass: later ones may have finished as well (a
    // window of messages pulled back to back), and one stream query answers for all of them.
    // (Not on the first: where copies finish one by one, that query would mostly say "busy".)
    std::uint64_t issued = order->issued.load(std::memory_order_acquire);
    if (pass && issued > seq_ && pass->noteDone(stream_) == 2) {
      cudaStream_t s = streams().s[stream_ / 4][stream_ % 4];
      gAsked.fetch_add(1, std::memory_order_relaxed);
      if (cudaStreamQuery(s) == cudaSuccess) raise(order->doneUpTo, issued);
      else (void)cudaGetLastError();
    }
  }
  release();
  return true;
}

base::Status GpuCopy::wait() {
  if (event_) {
    cudaError_t e = cudaEventSynchronize(static_cast<cudaEvent_t>(event_));
    if (e != cudaSuccess) error_ = cudaFail("copy", e);
    giveEvent(static_cast<cudaEvent_t>(event_));
    event_ = nullptr;
  }
  return error_;
}

void quiesceCopies() {
  Streams& st = streams();
  std::vector<cudaStream_t> all;
  {
    std::lock_guard lock(st.mutex);
    for (auto& perDevice : st.s)
      for (cudaStream_t s : perDevice)
        if (s) all.push_back(s);
  }
  for (cudaStream_t s : all)
    if (cudaStreamSynchronize(s) != cudaSuccess) (void)cudaGetLastError();  // errors surface with the copies
}

base::Status copySync(void* dst, const void* src, std::size_t n, int device, CopyDir dir) {
  GpuCopy c;
  base::Status s = c.start(dst, src, n, device, dir);
  if (!s.isOk()) return s;
  return c.wait();
}

#else  // host-only build: no GPU memory can exist, so no copy is ever asked for.

DeviceScope::DeviceScope(int) {}
DeviceScope::~DeviceScope() {}
GpuCopy& GpuCopy::operator=(GpuCopy&& o) noexcept {
  error_ = std::move(o.error_);
  return *this;
}
GpuCopy::~GpuCopy() {}
base::Status GpuCopy::start(void*, const void*, std::size_t n, int, CopyDir, Issue, CopyIds) {
  if (n == 0) return base::Status::ok();
  return base::Status(base::Errc::kUnsupported, "GPU copy in a build without CUDA");
}
bool GpuCopy::done(PollPass*) { return true; }
void quiesceCopies() {}
void GpuCopy::release() {}
base::Status GpuCopy::wait() { return error_; }
base::Status copySync(void*, const void*, std::size_t n, int, CopyDir) {
  if (n == 0) return base::Status::ok();
  return base::Status(base::Errc::kUnsupported, "GPU copy in a build without CUDA");
}

#endif

}  // namespace cgdr::mem
