#include "mem/gpu_copy.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/log.hpp"
#include "mem/classify.hpp"
#include "mem/copy_graph.hpp"
#include "mem/gpu_batch.hpp"
#include "mem/resident.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::mem {
namespace {
std::atomic<unsigned long long> gGraphCopies{0}, gRepeatedCopies{0}, gPlainCopies{0}, gAsked{0}, gInferred{0},
    gBatched{0}, gKernels{0}, gBatchedLargest{0};
}  // namespace

CopyCounts copyCounts() {
  ResidentCounts r = residentCounts();
  return {gGraphCopies.load(std::memory_order_relaxed), gRepeatedCopies.load(std::memory_order_relaxed),
          gPlainCopies.load(std::memory_order_relaxed), gAsked.load(std::memory_order_relaxed),
          gInferred.load(std::memory_order_relaxed),    gBatched.load(std::memory_order_relaxed),
          gKernels.load(std::memory_order_relaxed),     gBatchedLargest.load(std::memory_order_relaxed),
          r.copies,                                     r.launches,
          r.redone,                                     r.notRunning,
          r.full,                                       r.crewed,
          r.turned,                                     r.leftAsked,
          r.longestNs,                                  r.waited,
          r.waitedNs};
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

// Per stream, what is known of its copies in order: `issued` counts the copies put on it (a
// copy's place, taken with its event recorded under `issue`, so places follow stream order);
// every copy up to `doneUpTo` has finished (raised where a copy's event or the whole stream was
// seen done).
struct Order {
  std::mutex issue;
  std::atomic<std::uint64_t> issued{0}, doneUpTo{0};
};

// A device's streams: one per CopyDir (slots 0-3), then kPeer's further lanes (Issue::kGraphLanes),
// each with copy graphs of its own: a graph launched on one stream while an earlier launch of it
// runs on another waits for that one (a window of copies between the same two buffers, as a
// bandwidth test sends, moved 0.86x of one stream's rate at 2 MiB across two pods with the graphs
// shared by the lanes, 1.17-1.26x with a set per lane).
constexpr int kMaxLanes = 4;
constexpr int kSlots = 4 + kMaxLanes - 1;
base::Setting<long long> gLanes("CGDR_CUDA_PEER_LANES", "4", "streams",
                                "Streams a GPU's copies to and from memory of a GPU this process cannot see (a container "
                                "that sees only its own GPU) go to in turn, from CGDR_CUDA_PEER_LANES_MIN: there one "
                                "stream moved windows of 1-8 MiB copies at 0.68-0.88x of four (between two GPUs the "
                                "process sees, no difference). Across two pods on two H100s: bandwidth at 2-4 MiB "
                                "1.20-1.22x, both ways at once at 2-32 MiB 1.05-1.37x (medians of three runs; "
                                "docs/performance.md, thirty-eighth session). Each lane keeps its own copy graphs "
                                "(CGDR_CUDA_COPY_GRAPHS). 1: one stream.",
                                base::IntRange{1, kMaxLanes});

base::Setting<base::Bytes> gLanesMin("CGDR_CUDA_PEER_LANES_MIN", "2M", "bytes",
                                     "CGDR_CUDA_PEER_LANES spreads copies of at least this size; smaller ones stay on "
                                     "one stream, where their windows go to the copy kernel (CGDR_CUDA_BATCH). Spread "
                                     "as well, windows of 256 KiB-1 MiB across two pods moved 0.55-0.95x as much (one "
                                     "run; docs/performance.md, thirty-eighth session).");

int lanes() {
  static const int n = static_cast<int>(gLanes.get());  // (1 to kMaxLanes: its range)
  return n;
}

std::size_t lanesMin() {
  static const std::size_t n = gLanesMin.get().value;
  return n;
}

// The slot of peer lane `lane` (0: kPeer's own).
int laneSlot(int lane) { return lane == 0 ? static_cast<int>(CopyDir::kPeer) : 3 + lane; }

struct Streams {
  std::mutex mutex;
  cudaStream_t s[kMaxDevices][kSlots] = {};
  CopyGraphs graphs[kMaxDevices][kSlots];
  Order order[kMaxDevices][kSlots];
  std::atomic<unsigned> nextLane[kMaxDevices] = {};
  std::vector<cudaEvent_t> events[kMaxDevices];  // per device: an event is recorded on streams of its own context only
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

// The stream of (device, slot); created on first use with the device current.
base::Result<cudaStream_t> streamFor(int device, int slot) {
  Streams& st = streams();
  std::lock_guard lock(st.mutex);
  cudaStream_t& s = st.s[device][slot];
  if (!s) {
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess) return cudaFail("cudaStreamCreateWithFlags", e);
    noteGpuState();
  }
  return s;
}

// An event of `device` (made in cgdr's context of it: the caller holds a DeviceScope).
base::Result<cudaEvent_t> takeEvent(int device) {
  Streams& st = streams();
  {
    std::lock_guard lock(st.mutex);
    std::vector<cudaEvent_t>& pool = st.events[device];
    if (!pool.empty()) {
      cudaEvent_t e = pool.back();
      pool.pop_back();
      return e;
    }
  }
  cudaEvent_t ev;
  cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (e != cudaSuccess) return cudaFail("cudaEventCreate", e);
  noteGpuState();
  return ev;
}

void giveEvent(int device, cudaEvent_t ev) {
  Streams& st = streams();
  std::lock_guard lock(st.mutex);
  st.events[device].push_back(ev);
}

}  // namespace

DeviceScope::DeviceScope(int device) {
  if (device < 0) return;
  std::uintptr_t cur = 0;
  bool known = base::cuda::currentHandle(&cur);
  if (std::uintptr_t work = workContext(device)) {
    // (A context cgdr's state went with is not made current again: gpuStateLost refuses what
    // would use it, and its handle may be another context's by now.)
    if (!known || cur == work || gpuStateLost()) return;
    pushed_ = base::cuda::pushContext(work);
    return;
  }
  if (cudaGetDevice(&saved_) != cudaSuccess || saved_ == device) {
    saved_ = -1;
    return;
  }
  savedCtx_ = known ? cur : 0;
  cudaSetDevice(device);
}

DeviceScope::~DeviceScope() {
  if (pushed_) {
    base::cuda::popContext();
  } else if (saved_ >= 0) {
    // the caller's own context where one was current (cudaSetDevice would make the runtime's current)
    if (!savedCtx_ || !base::cuda::setCurrentContext(savedCtx_)) cudaSetDevice(saved_);
  }
}

GpuCopy& GpuCopy::operator=(GpuCopy&& o) noexcept {
  if (this != &o) {
    if (pending()) (void)wait();
    event_ = o.event_;
    sharers_ = o.sharers_;
    stream_ = o.stream_;
    seq_ = o.seq_;
    resident_ = o.resident_;
    flagged_ = o.flagged_;
    error_ = std::move(o.error_);
    o.event_ = nullptr;
    o.sharers_ = nullptr;
    o.resident_ = 0;
  }
  return *this;
}

void GpuCopy::release() {
  auto ev = static_cast<cudaEvent_t>(event_);
  event_ = nullptr;
  const int device = stream_ >= 0 ? stream_ / kSlots : 0;  // (set with the event)
  if (int* n = sharers_) {
    sharers_ = nullptr;
    Streams& st = streams();
    std::lock_guard lock(st.mutex);
    if (--*n > 0) return;  // another copy of the window still holds the event
    delete n;
    st.events[device].push_back(ev);
    return;
  }
  giveEvent(device, ev);
}

int peerLanes() { return lanes(); }
std::size_t peerLanesMin() { return lanesMin(); }

bool streamBusy(int device, CopyDir dir) {
  if (device < 0 || device >= kMaxDevices) return false;
  auto busy = [&](int slot) {
    const Order& o = streams().order[device][slot];
    return o.issued.load(std::memory_order_acquire) > o.doneUpTo.load(std::memory_order_acquire);
  };
  if (dir != CopyDir::kPeer) return busy(static_cast<int>(dir));
  for (int lane = 0; lane < lanes(); ++lane)
    if (busy(laneSlot(lane))) return true;
  return residentBusy(device);
}

namespace {
// A window the copy kernel took (CGDR_STATS).
void countWindow(const GpuCopy::Many* items, int count) {
  gBatched.fetch_add(static_cast<unsigned long long>(count), std::memory_order_relaxed);
  gKernels.fetch_add(1, std::memory_order_relaxed);
  unsigned long long most = 0;
  for (int i = 0; i < count; ++i) most = std::max<unsigned long long>(most, items[i].n);
  unsigned long long seen = gBatchedLargest.load(std::memory_order_relaxed);
  while (most > seen && !gBatchedLargest.compare_exchange_weak(seen, most, std::memory_order_relaxed)) {
  }
}
}  // namespace

base::Status GpuCopy::startMany(const Many* items, GpuCopy* const* copies, int count, int device) {
  if (count <= 0 || count > kGatherMax) return base::Status(base::Errc::kArgument, "copy window of bad size");
  device = normalize(device);
  DeviceScope scope(device);
  auto s = streamFor(device, static_cast<int>(CopyDir::kPeer));
  if (!s.isOk()) return s.status();
  auto ev = takeEvent(device);
  if (!ev.isOk()) return ev.status();
  GatherArgs a;
  a.count = static_cast<std::uint32_t>(count);
  for (int i = 0; i < count; ++i)
    a.item[i] = {reinterpret_cast<std::uint64_t>(items[i].src), reinterpret_cast<std::uint64_t>(items[i].dst),
                 items[i].n};
  Order& order = streams().order[device][static_cast<int>(CopyDir::kPeer)];
  std::lock_guard issuing(order.issue);
  auto e = static_cast<cudaError_t>(launchGather(a, s.value()));
  if (e != cudaSuccess) {  // not logged as an error: the caller starts the copies one by one, which
    giveEvent(device, ev.value());  // report a real CUDA failure themselves (launchGather logs an unusable kernel)
    (void)cudaGetLastError();
    return base::Status(base::Errc::kCuda, std::string("copy kernel: ") + cudaGetErrorString(e));
  }
  e = cudaEventRecord(ev.value(), s.value());
  if (e != cudaSuccess) {  // the kernel runs: wait for it here rather than have the copies issued again
    giveEvent(device, ev.value());
    (void)cudaFail("cudaEventRecord", e);
    e = cudaStreamSynchronize(s.value());
    if (e != cudaSuccess) return cudaFail("copy kernel", e);
    for (int i = 0; i < count; ++i) {
      if (copies[i]->pending()) (void)copies[i]->wait();
      copies[i]->error_ = base::Status::ok();  // done: no event left to ask
      copies[i]->flagged_ = false;
    }
    countWindow(items, count);
    return base::Status::ok();
  }
  std::uint64_t seq = order.issued.fetch_add(1, std::memory_order_release) + 1;
  int* sharers = new int(count);
  for (int i = 0; i < count; ++i) {
    GpuCopy& c = *copies[i];
    if (c.pending()) (void)c.wait();
    c.event_ = ev.value();
    c.sharers_ = sharers;
    c.stream_ = device * kSlots + static_cast<int>(CopyDir::kPeer);
    c.seq_ = seq;
    c.flagged_ = false;  // (a flag is set only by the resident kernel: start)
    c.error_ = base::Status::ok();
  }
  countWindow(items, count);
  return base::Status::ok();
}

GpuCopy::~GpuCopy() {
  if (pending()) (void)wait();
}

base::Status GpuCopy::start(void* dst, const void* src, std::size_t n, int device, CopyDir dir, Issue issue,
                            CopyIds ids, bool resident, const DoneFlag* flag) {
  flagged_ = false;
  if (n == 0) return base::Status::ok();
  if (pending()) (void)wait();  // (a copy object is started once at a time)
  device = normalize(device);
  resident = resident && dir == CopyDir::kPeer && residentFits(n);
  if (resident) {
    if (std::uint64_t k = residentPost(device, dst, src, n, flag)) {
      flagged_ = flag && flag->usable();
      resident_ = device + 1;
      seq_ = k;
      stream_ = -1;
      error_ = base::Status::ok();
      return base::Status::ok();
    }
  }
  DeviceScope scope(device);
  int slot = static_cast<int>(dir);
  if (dir == CopyDir::kPeer && issue == Issue::kGraphLanes && lanes() > 1 && n >= lanesMin())
    slot = laneSlot(static_cast<int>(streams().nextLane[device].fetch_add(1, std::memory_order_relaxed) %
                                     static_cast<unsigned>(lanes())));
  auto s = streamFor(device, slot);
  if (!s.isOk()) return s.status();
  auto ev = takeEvent(device);
  if (!ev.isOk()) return ev.status();
  int mode = gGraph.get().index;
  bool viaGraph = (dir == CopyDir::kPeer || dir == CopyDir::kStage) && mode != kGraphOff &&
                  (issue != Issue::kMemcpy || mode == kGraphAlways);
  Order& order = streams().order[device][slot];
  std::lock_guard issuing(order.issue);
  cudaError_t e = cudaSuccess;
  GraphLaunch g = viaGraph ? streams().graphs[device][slot].launch(dst, src, n, ids, device, s.value())
                           : GraphLaunch::kRefused;
  if (g != GraphLaunch::kRefused) {
    gGraphCopies.fetch_add(1, std::memory_order_relaxed);
    if (g == GraphLaunch::kRepeated) gRepeatedCopies.fetch_add(1, std::memory_order_relaxed);
  } else {
    e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s.value());
    gPlainCopies.fetch_add(1, std::memory_order_relaxed);
  }
  if (e != cudaSuccess) {
    giveEvent(device, ev.value());
    return cudaFail(dir == CopyDir::kToHost ? "copy from GPU" : dir == CopyDir::kToDevice ? "copy to GPU" : "GPU to GPU copy", e);
  }
  e = cudaEventRecord(ev.value(), s.value());
  if (e != cudaSuccess) {
    giveEvent(device, ev.value());
    return cudaFail("cudaEventRecord", e);
  }
  event_ = ev.value();
  stream_ = device * kSlots + slot;
  seq_ = order.issued.fetch_add(1, std::memory_order_release) + 1;
  if (resident) residentWake(device);  // (where wanted: its launch overlaps this copy)
  return base::Status::ok();
}

bool GpuCopy::done(PollPass* pass) {
  if (resident_) {
    base::Status err;
    int r = residentPoll(resident_ - 1, seq_, &err);
    if (r == 0) return false;
    if (r < 0) error_ = err;
    resident_ = 0;
    return true;
  }
  if (!event_) return true;
  Order* order = nullptr;
  if (stream_ >= 0) {
    order = &streams().order[stream_ / kSlots][stream_ % kSlots];
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
      cudaStream_t s = streams().s[stream_ / kSlots][stream_ % kSlots];
      gAsked.fetch_add(1, std::memory_order_relaxed);
      if (cudaStreamQuery(s) == cudaSuccess) raise(order->doneUpTo, issued);
      else (void)cudaGetLastError();
    }
  }
  release();
  return true;
}

base::Status GpuCopy::wait() {
  if (resident_) {
    base::Status err;
    int r;
    for (int spins = 0; (r = residentPoll(resident_ - 1, seq_, &err)) == 0; ++spins)
      if (spins > 64) std::this_thread::yield();
    if (r < 0) error_ = err;
    resident_ = 0;
  }
  if (event_) {
    cudaError_t e = cudaEventSynchronize(static_cast<cudaEvent_t>(event_));
    if (e != cudaSuccess) error_ = cudaFail("copy", e);
    release();
  }
  return error_;
}

void quiesceCopies() {
  if (gpuStateLost()) return;
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
  residentQuiesce();
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
base::Status GpuCopy::start(void*, const void*, std::size_t n, int, CopyDir, Issue, CopyIds, bool, const DoneFlag*) {
  flagged_ = false;
  if (n == 0) return base::Status::ok();
  return base::Status(base::Errc::kUnsupported, "GPU copy in a build without CUDA");
}
bool GpuCopy::done(PollPass*) { return true; }
void quiesceCopies() {}
void GpuCopy::release() {}
base::Status GpuCopy::wait() { return error_; }
bool streamBusy(int, CopyDir) { return false; }
int peerLanes() { return 1; }
std::size_t peerLanesMin() { return 0; }
base::Status GpuCopy::startMany(const Many*, GpuCopy* const*, int, int) {
  return base::Status(base::Errc::kUnsupported, "GPU copy in a build without CUDA");
}
base::Status copySync(void*, const void*, std::size_t n, int, CopyDir) {
  if (n == 0) return base::Status::ok();
  return base::Status(base::Errc::kUnsupported, "GPU copy in a build without CUDA");
}

#endif

}  // namespace cgdr::mem
