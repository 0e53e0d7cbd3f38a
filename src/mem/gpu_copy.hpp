// Asynchronous copies between GPU and host memory on cgdr's own streams (one per device and
// direction, kPeer's lanes aside; non-blocking with respect to the legacy default stream),
// tracked by events.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/ids.hpp"
#include "base/status.hpp"
#include "mem/resident.hpp"

namespace cgdr::mem {

// Each direction has its own stream per device (kPeer several: its lanes, Issue::kGraphLanes), so
// copies of different kinds never queue behind each other: kPeer is a receiver's device-to-device
// copy (a pull over NVLink or a local one), kStage a sender's local copy into its staging ring
// (which must not wait behind the same GPU's pulls when two ranks send to each other at once).
enum class CopyDir { kToHost, kToDevice, kPeer, kStage };

// How a device-to-device copy is put on its stream. cudaMemcpyAsync costs ~3.4 us to issue for a
// copy within one GPU, or from/to memory of a GPU this process cannot see (a container that sees
// only its own GPU), against ~1.6 us between two GPUs it can see; one CUDA graph per stream
// holding a single copy node, re-pointed per copy, costs ~1.9 us in every case (measured on
// nvidia-h200-x2 by bench/vis_probe/). kGraph asks for the graph (used where the other side is
// on this GPU or on an invisible one); CGDR_CUDA_GRAPH_COPY overrides. kGraphLanes: the graph,
// and a kPeer copy of at least CGDR_CUDA_PEER_LANES_MIN bytes goes to the next of the device's
// peer lanes in turn (CGDR_CUDA_PEER_LANES streams): where the other side is on a GPU this
// process cannot see, windows of 1-8 MiB copies moved 1.14-1.47x more over 4 streams than over
// one (between two visible GPUs, no more: bench/vis_probe/ `-only wstreams`, thirty-eighth
// session).
enum class Issue { kMemcpy, kGraph, kGraphLanes };

// What the two sides of a copy are, as the caller knows them: an identity of the allocation
// holding each side that changes when it is freed and allocated again (a buffer id, a shared
// allocation's id). With both set, a copy repeating an earlier one (same identities, addresses
// and size) launches that copy's graph without re-pointing it (~0.8 us less to issue).
struct CopyIds {
  std::uint64_t dst = 0, src = 0;
};
// One identity out of parts (e.g. a peer's rank and the id of an allocation it shared).
inline std::uint64_t copyId(std::uint64_t a, std::uint64_t b) {
  std::uint64_t h = base::mix64(base::mix64(a + base::kGoldenGamma) ^ b);
  return h ? h : 1;
}

// What one pass of a poller over many copies has learnt. Asking the driver whether a copy is
// done costs ~1.3 us here (bench/vis_probe/, "call costs"); a stream runs its copies in order,
// so once a copy is found unfinished, every later copy on its stream is unfinished too and is
// not asked about again in the same pass. And where a pass finds a second copy of a stream
// done, more have likely finished together (a window of small messages): the stream is asked
// once for all of them. Lives for one pass only (a copy found unfinished may finish right after).
class PollPass {
 public:
// GCC under ASan cannot see that find() returns only marks written by mark() (a false warning).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  bool knownPending(int stream, std::uint64_t seq) const {
    const Mark* m = find(stream);
    return m && m->pending && m->pending <= seq;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
  void notePending(int stream, std::uint64_t seq) {
    if (Mark* m = mark(stream))
      if (!m->pending || seq < m->pending) m->pending = seq;
  }
  // Counts a copy of `stream` seen done; returns how many were in this pass.
  int noteDone(int stream) {
    Mark* m = mark(stream);
    return m ? ++m->done : 1;
  }

 private:
  static constexpr int kMarks = 16;  // streams remembered per pass (up to 7 per GPU in use)
  struct Mark {  // not initialised (zeroing 16 took ~15 ns a pass, CPU machine); [0, n_) are read
    int stream;
    std::uint64_t pending;  // the earliest copy found unfinished (0: none)
    int done;
  };
  int indexOf(int stream) const {  // -1: not remembered
    for (int i = 0; i < n_; ++i)
      if (marks_[i].stream == stream) return i;
    return -1;
  }
  const Mark* find(int stream) const {
    int i = indexOf(stream);
    return i < 0 ? nullptr : &marks_[i];
  }
  Mark* mark(int stream) {
    if (int i = indexOf(stream); i >= 0) return &marks_[i];
    if (n_ == kMarks) return nullptr;  // not remembered: its copies are asked as without a pass
    marks_[n_] = {stream, 0, 0};
    return &marks_[n_++];
  }
  Mark marks_[kMarks];
  int n_ = 0;
};

// One asynchronous copy; completion is polled or waited for. Move-only.
class GpuCopy {
 public:
  GpuCopy() = default;
  GpuCopy(GpuCopy&& o) noexcept { *this = std::move(o); }
  GpuCopy& operator=(GpuCopy&& o) noexcept;
  GpuCopy(const GpuCopy&) = delete;
  GpuCopy& operator=(const GpuCopy&) = delete;
  ~GpuCopy();

  // Starts copying n bytes; `device` is the GPU that owns the device side. `issue`: only for
  // copies whose both sides are GPU memory (kPeer, kStage); anything the graph cannot take is
  // issued as a plain copy. `resident`: a kPeer copy whose other side is on another GPU, both
  // sides reachable by `device`'s SMs (the copy kernel's condition, startMany), which the
  // resident copy kernel may take (mem/resident.hpp; not held back for a window by the caller).
  // `flag` (with `resident`): where the resident kernel takes the copy, it sets the flag once the
  // bytes are fenced (or this process does, should the copy be made on the copy engine after the
  // kernel left): flagged() says so. Elsewhere the flag is left alone.
  base::Status start(void* dst, const void* src, std::size_t n, int device, CopyDir dir,
                     Issue issue = Issue::kMemcpy, CopyIds ids = {}, bool resident = false,
                     const DoneFlag* flag = nullptr);
  // The last start() handed its flag on: it is set where the copy succeeds (also after done()).
  bool flagged() const { return flagged_; }
  // True once the copy finished (or none was started). Errors surface in error() and wait().
  // Answered without the driver where a later copy on the same stream was seen done, or (with
  // `pass`) an earlier one was seen unfinished in the same pass.
  bool done(PollPass* pass = nullptr);
  // Blocks until finished; reports a failed copy.
  base::Status wait();
  // A window of copies between GPU buffers moved by one copy-kernel launch on `device`'s
  // peer stream (mem/gather.hpp; `n` of each at most CGDR_CUDA_BATCH_LIMIT, mem::batchable):
  // copies[i] finishes when the launch does (one event shared by all). Every side must be
  // reachable by that GPU's SMs: its own memory, a peer GPU's with peer access, or another
  // process's memory mapped here for it. Nothing starts where the kernel cannot be loaded or
  // launched (the caller then issues them one by one); where it launched but its event could not
  // be recorded, the launch is waited for here (done, or its failure returned).
  struct Many {
    void* dst;
    const void* src;
    std::size_t n;
  };
  static base::Status startMany(const Many* items, GpuCopy* const* copies, int count, int device);
  bool pending() const { return event_ != nullptr || resident_ != 0; }
  // Which of cgdr's streams the copy went to (-1: none started; distinct per device, direction and
  // peer lane).
  int stream() const { return stream_; }
  // The failure of a finished copy (ok while pending or after success).
  const base::Status& error() const { return error_; }

 private:
  void release();           // gives the event back
  void* event_ = nullptr;  // cudaEvent_t
  int* sharers_ = nullptr;  // a startMany event: how many copies still hold it (under the streams' mutex)
  int stream_ = -1;        // which of cgdr's streams (device * kSlots + slot: a direction or a peer lane)
  int resident_ = 0;       // taken by the resident copy kernel of GPU resident_ - 1 (its number there: seq_)
  std::uint64_t seq_ = 0;  // its place on that stream (1, 2, ...)
  bool flagged_ = false;
  base::Status error_;
};

// Copies issued through the copy graphs (of which `repeated` launched a graph unchanged), and
// plainly, by this process so far (CGDR_STATS).
// `asked`: completions asked of the driver (event or stream queries), `inferred`: answered from
// a stream's order instead (PollPass, GpuCopy::done).
// `batched`: copies moved by the copy kernel, in `kernels` launches (GpuCopy::startMany), the
// largest of them `batchedLargest` bytes. `resident`: copies the resident kernel took, in
// `residentLaunches` launches; `residentRedone`: of them made on the copy engine after it left;
// `residentNotRunning`, `residentFull`: copies it could have taken, made on the copy engine since
// it was not running (after a first launch) or full; `residentCrewed`: batches of them its
// helpers shared (CGDR_CUDA_RESIDENT_BLOCKS); `residentTurned`, `residentLeftAsked`: kernels that
// left switched out, or asked to (before cudaDeviceSynchronize, cudaFree); `residentLongestNs`:
// the longest time a kernel spent between two looks; `residentWaited`: copies that waited for a
// launched kernel's start, `residentWaitedNs` in all (mem/resident.hpp).
struct CopyCounts {
  unsigned long long graph = 0, repeated = 0, plain = 0, asked = 0, inferred = 0, batched = 0, kernels = 0,
                     batchedLargest = 0, resident = 0, residentLaunches = 0, residentRedone = 0, residentNotRunning = 0,
                     residentFull = 0, residentCrewed = 0, residentTurned = 0, residentLeftAsked = 0,
                     residentLongestNs = 0, residentWaited = 0, residentWaitedNs = 0;
};
CopyCounts copyCounts();

// The peer lanes Issue::kGraphLanes spreads copies over (CGDR_CUDA_PEER_LANES, 1-4), and the
// smallest copy it spreads (CGDR_CUDA_PEER_LANES_MIN; smaller ones stay on the peer stream).
int peerLanes();
std::size_t peerLanesMin();

// Whether a copy cgdr put on (device, dir) has not been seen finished yet (its own records, no
// driver call: a copy that finished unseen still counts); kPeer: on any of its peer lanes or in
// the resident copy kernel.
bool streamBusy(int device, CopyDir dir);

// Waits until every copy cgdr has put on its streams so far has finished (before memory such
// copies may read goes away). After a reset of the GPU by the program (gpuStateLost: interposed or
// found afterwards) there is none: the streams went with the context, and asking about them would crash.
void quiesceCopies();

// Synchronous copy (both directions) used by blocking paths.
base::Status copySync(void* dst, const void* src, std::size_t n, int device, CopyDir dir);

// Makes cgdr's context of `device` current for the scope (workContext: the one it made its state
// of the device in; before it made any, the context of the device current in this thread, else the
// runtime's for the device) and the caller's context current again afterwards - also where the
// program works in a context of its own (cuCtxCreate). Where cgdr's context is current already,
// one cuCtxGetCurrent.
class DeviceScope {
 public:
  explicit DeviceScope(int device);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int saved_ = -1;               // the caller's device, where the runtime's context of `device` was made current
  std::uintptr_t savedCtx_ = 0;  // ... and the caller's context then (0: none was current)
  bool pushed_ = false;          // cgdr's context pushed: popped at the end
};

}  // namespace cgdr::mem
