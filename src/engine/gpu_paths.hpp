// The engine's GPU paths to co-located peers (ARCHITECTURE.md §5): what a sender offers with the
// envelope of a GPU message (a legacy IPC handle, its own exportable cuMem allocation, its cuMem
// staging ring), and what a receiver can reach of such an offer. Everything is created lazily on
// first GPU use, so ranks that never touch a GPU never create a CUDA context.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "channel/cuda_ipc/ipc.hpp"
#include "channel/cuda_vmm/link.hpp"
#include "mem/gpu_copy.hpp"
#include "mem/memtype.hpp"
#include "mem/resident.hpp"
#include "sched/select.hpp"

namespace cgdr::engine {

// Follows the envelope of a rendezvous message whose bytes are in GPU memory.
struct GpuOffer {
  // kMps: the describing process shares the GPU `gpu` through MPS (its work and the peer's may run
  // side by side there, instead of in turns).
  enum : std::uint32_t { kIpc = 1, kZc = 2, kStage = 4, kMps = 8 };
  std::uint32_t flags = 0;
  std::int32_t kind = 0;  // mem::MemKind of the source
  std::uint64_t zcId = 0, zcSize = 0, zcOffset = 0;  // kZc: the allocation as shared over the link
  channel::cuda_ipc::Handle ipc{};                     // kIpc
  std::uint64_t ringId = 0;                            // kStage: the sender's ring as shared
  std::uint8_t gpu[16] = {};                           // UUID of the GPU holding the bytes (0: unknown)
};
static_assert(sizeof(GpuOffer) == 144);

class GpuPaths {
 public:
  // Collective over `world` (all ranks of the engine's wire-up, in the same order).
  // `slots`: blocks of the staging ring (the shm segment holds their flags).
  static std::unique_ptr<GpuPaths> open(MPI_Comm world, std::uint64_t nonce, const std::vector<int>& local,
                                        std::uint32_t slots);

  sched::PeerClass peerClass(int peerWorld) const;
  // What the pair can use for a contiguous GPU message (sender side: before any offer).
  sched::Caps senderCaps(int peerWorld) const;
  // Receiver side, for a message with this offer (the offered ring must map on `device`; known
  // after the first message, without asking the link again).
  sched::Caps receiverCaps(int peerWorld, const GpuOffer& o, int device);

  // Sender: fills the offer for n contiguous bytes of device memory at p sent to peerWorld;
  // offering the staging ring shares it with the peer first. `known`: p's classification by the
  // caller (its device, and its allocation where known, which saves asking the driver again).
  void offer(int peerWorld, const void* p, std::size_t n, const mem::MemInfo& known, GpuOffer* o);
  // Fills the offer's kIpc/kZc part for n contiguous bytes of device memory at p, as far as
  // peerWorld can map them (sharing a cuMem allocation's fd with the peer first). Used for a
  // sender's source (the receiver pulls) and for a receiver's destination (the sender pushes).
  void describe(int peerWorld, const void* p, std::size_t n, const mem::MemInfo& known, GpuOffer* o);
  // How to issue a copy between this rank's GPU `device` and the bytes `o` describes (or the
  // staging ring of its sender, on the same GPU): through the copy graph where they are on the
  // same GPU or on one this process cannot see (there over the peer lanes), else cudaMemcpyAsync
  // (mem::Issue).
  mem::Issue issueFor(const GpuOffer& o, int device) { return issueFor(placeOf(o, device)); }
  // Where the bytes `o` describes are, seen from this rank's GPU `device` (one UUID lookup, for
  // both the issue method and the same-GPU policy). kSameGpu: on this GPU, which the two processes
  // use in turns (each switch between their work costs a context switch: the same-GPU policy of
  // sched applies); kSameGpuMps: on this GPU, which both share through MPS (their work runs side by
  // side: as between two GPUs).
  enum class Place : std::uint8_t { kUnknown, kSameGpu, kSameGpuMps, kOtherVisible, kInvisible };
  Place placeOf(const GpuOffer& o, int device);
  // Whether the SMs of this rank's GPU `device` can reach the bytes `o` describes, mapped here
  // through channel `used` at `place` (the copy kernel's condition, mem::GpuCopy::startMany): a
  // peer's cuMem allocation is mapped with access for `device`; legacy IPC memory on the same
  // GPU, or on another visible GPU with peer access to it; not where that GPU is invisible.
  bool smReaches(const GpuOffer& o, sched::Channel used, Place place, int device);
  // Whether a lone copy of n bytes between `device` and the bytes `o` describes may go to the
  // resident copy kernel (mem/resident.hpp): it is on and takes n bytes (checked first: a small
  // message's test, and smReaches takes the lock), the SMs reach them and they are on another GPU (on
  // this one, a kernel that stays would hold the GPU from the other process's work, which runs in
  // turns).
  bool residentOk(const GpuOffer& o, sched::Channel used, Place place, int device, std::size_t n) {
    return mem::residentFits(n) && (place == Place::kOtherVisible || place == Place::kInvisible) &&
           smReaches(o, used, place, device);
  }
  // The host rail's capabilities for a destination at p (sched::Caps::otherGpu, otherGpuInvisible).
  static void railCaps(Place p, sched::Caps* caps) {
    caps->otherGpu = p == Place::kOtherVisible || p == Place::kInvisible;
    caps->otherGpuInvisible = p == Place::kInvisible;
  }
  static mem::Issue issueFor(Place p) {
    if (p == Place::kInvisible) return mem::Issue::kGraphLanes;  // (its copies spread over the peer lanes)
    return p == Place::kSameGpu || p == Place::kSameGpuMps ? mem::Issue::kGraph : mem::Issue::kMemcpy;
  }
  // Whether this rank drives the pair it forms with peerWorld where their buffers share a GPU
  // (sched::Table::sameGpuDriver): the lower world rank does.
  bool drives(int peerWorld) const { return self_ < peerWorld; }
  // Whether peerWorld could pull n contiguous bytes of device memory at p (legacy IPC or an
  // exportable cuMem allocation), as describe() would offer them; nothing is shared yet.
  bool pullable(int peerWorld, const void* p, std::size_t n, const mem::MemInfo& known);
  // An identity of peerWorld's memory that `o` names for channel c (kCudaIpc, kCudaVmmZc), for
  // the copy graphs (mem::CopyIds); 0: none.
  static std::uint64_t peerMemoryId(int peerWorld, const GpuOffer& o, sched::Channel c) {
    return c == sched::Channel::kCudaIpc ? peerMemoryId(peerWorld, c, o.ipc.bufferId)
                                         : peerMemoryId(peerWorld, c, o.zcId);
  }
  // The same from the id itself: a legacy IPC buffer id (kCudaIpc), or the id of an allocation
  // or staging ring shared over the cuMem link (kCudaVmmZc, kCudaVmmStage).
  static std::uint64_t peerMemoryId(int peerWorld, sched::Channel c, std::uint64_t id);
  // Whether [p, p+n) lies in an exportable cuMem allocation that peerWorld can map.
  bool zeroCopyable(int peerWorld, const void* p, std::size_t n, const mem::MemInfo& known);
  // The peer's described bytes as an address in this process for channel c (kCudaIpc or
  // kCudaVmmZc), usable from `device`; nullptr if they cannot be reached.
  void* peerAddress(int peerWorld, const GpuOffer& o, sched::Channel c, int device);

  // Sender: this rank's staging ring (created on first use on `device`) made known to the peer;
  // once it is, answered from a per-peer record without locks (every GPU offer asks).
  struct Ring {
    char* base = nullptr;
    std::uint64_t id = 0;  // as the peer knows it
    std::size_t slotBytes = 0;
  };
  bool ring(int peerWorld, int device, Ring* out);
  // Receiver: the peer's ring `id`, mapped (at least `need` bytes), usable from `device`.
  void* peerRing(int peerWorld, std::uint64_t id, std::size_t need, int device);
  std::size_t slotBytes() const { return slotBytes_; }
  // Reads what peers sent over the cuMem link without waiting (releases of freed memory); the
  // engine calls it now and then.
  void drainLink() {
    if (link_) link_->drain();
  }
  // Peers' allocations mapped here now, and mappings dropped because their owner freed them.
  channel::cuda_vmm::Link::Counts linkCounts() { return link_ ? link_->counts() : channel::cuda_vmm::Link::Counts{}; }
  // The GPU this rank copies with when neither buffer is on a GPU of its own (a host receive of a
  // GPU message): the first GPU its buffers were seen on, else the caller's current device. One
  // device for all such copies, as peer memory is mapped for one device.
  int homeDevice();
  void noteDevice(int device) {
    int none = -1;
    if (device >= 0) home_.compare_exchange_strong(none, device);
  }

  // Page-locks host memory once (shared-memory segments), so copies to and from it are
  // asynchronous and run at full speed, and maps it for the GPUs: the address of p there, or
  // nullptr where it could not be page-locked or mapped (that only costs speed).
  void* pin(void* p, std::size_t n);
  // Regions pin() page-locked, and those the driver refused (CGDR_STATS).
  std::pair<std::size_t, std::size_t> pinCounts() {
    std::lock_guard lock(mutex_);
    return {pinnedOk_, pinned_.size() - pinnedOk_};
  }

  ~GpuPaths();

 private:
  GpuPaths() = default;
  // CGDR_CUDA_MALLOC=auto: turns the exportable heap on where a co-located peer can map this
  // rank's GPU memory only through cuMem file descriptors.
  void activateHeapIfNeeded();
  std::unique_ptr<channel::cuda_vmm::Link> link_;
  channel::cuda_ipc::Cache ipcIn_;
  struct Export {
    std::uint64_t bufferId = 0;
    std::size_t rangeSize = 0;
    bool ipcOk = false;
    channel::cuda_ipc::Handle ipc{};
    bool zcChecked = false, zcOk = false;
    bool zcShared = false;  // its fd went to a peer (a release is due once it is freed)
    std::uint64_t zcBase = 0;
    std::size_t zcSize = 0;
    // [addr, addr+n) lies in what the legacy handle / the cuMem allocation covers.
    bool ipcHolds(std::uint64_t addr, std::size_t n) const {
      return ipcOk && addr >= ipc.base && addr + n <= ipc.base + rangeSize;
    }
    bool zcHolds(std::uint64_t addr, std::size_t n) const {
      return zcOk && addr >= zcBase && addr + n <= zcBase + zcSize;
    }
  };
  // The exports whose fds went to peers (zcShared) are checked every kSweepEvery new ones, and
  // those freed meanwhile are released at their peers and forgotten (an allocation freed and made
  // again at the same address is noticed at once, by exportOf).
  static constexpr std::size_t kSweepEvery = 16;
  void releaseFreedShares();  // mutex_ held
  std::size_t sharedSinceSweep_ = 0;
  // The export state of the allocation holding [p, p+n) (mutex_ held); nullptr for memory that
  // is not plain device memory. zc: also check cuMem exportability (once per allocation).
  Export* exportOf(const void* p, std::size_t n, bool zc, const mem::MemInfo& known);
  std::unordered_map<std::uint64_t, Export> exports_;  // by allocation base
  std::unordered_map<void*, void*> pinned_;  // page-locked region -> its GPU address (or nullptr)
  std::size_t pinnedOk_ = 0;
  // GPU UUIDs of this process's devices by ordinal, read on first use (mutex_ held).
  const std::uint8_t* uuidOf(int device);  // also fills mps_ (both under mutex_)
  std::vector<std::vector<std::uint8_t>> uuids_;
  std::unordered_map<int, bool> peerAccess_;  // device * 256 + visible peer device: cudaDeviceCanAccessPeer
  std::vector<bool> mps_;  // per device: this process shares it through MPS
  std::vector<bool> sharedSeen_;  // per device: a peer's bytes were found on it (mem::residentShared said)
  // Per world rank: the id this rank's ring has at that peer (0: not shared yet; set once, as
  // the ring lives until finalize), and (peer's ring id << 9 | (device + 1) << 1 | maps) of the
  // last ring of that peer asked about (0: none yet).
  std::unique_ptr<std::atomic<std::uint64_t>[]> ringShared_, ringMapped_;
  std::atomic<char*> ringBase_{nullptr};
  std::atomic<int> home_{-1};
  int self_ = -1;  // this rank in the engine's world
  std::size_t slotBytes_ = 0;
  std::uint32_t slots_ = 0;
  bool ringFailed_ = false;
  std::mutex mutex_;
};

}  // namespace cgdr::engine
