#include "engine/gpu_paths.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/log.hpp"
#include "mem/classify.hpp"
#include "mem/gpu_copy.hpp"
#include "mem/resident.hpp"
#include "mem/vmm.hpp"
#include "mem/vmm_heap.hpp"
#include "topo/detect.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::engine {
namespace {

base::Setting<bool> gVmm("CGDR_CUDA_VMM", "1", "",
                         "Share cuMem memory between co-located ranks through file descriptors (cuda-vmm channels; "
                         "the only GPU path across PID namespaces).");
base::Setting<base::Bytes> gBlock("CGDR_CUDA_BLOCK_SIZE", "16M", "bytes",
                                  "Block size of the cuMem staging ring (cuda-vmm-stage pipelines in blocks of this "
                                  "size), rounded down to a multiple of 4K.",
                                  base::SizeRange{64 * 1024, std::size_t{4} << 30}, {"MV2_CUDA_BLOCK_SIZE"});

constexpr std::uint64_t kRingKey = ~std::uint64_t{0};

// Per world rank, what the locality table said when the engine started.
struct PeerCaps {
  sched::PeerClass cls = sched::PeerClass::kSameNamespace;
  bool ipcImport = false, ipcExport = false, vmm = false;
};
std::vector<PeerCaps> gPeers;

int currentDevice() {
#if CGDR_HAVE_CUDA
  int d = 0;
  if (cudaGetDevice(&d) == cudaSuccess) return d;
#endif
  return 0;
}

}  // namespace

std::unique_ptr<GpuPaths> GpuPaths::open(MPI_Comm world, std::uint64_t nonce, const std::vector<int>& local,
                                         std::uint32_t slots) {
  std::unique_ptr<GpuPaths> g(new GpuPaths);
  g->slots_ = slots;
  PMPI_Comm_rank(world, &g->self_);
  const topo::LocalityTable& t = topo::locality();
  gPeers.assign(t.peers.size(), PeerCaps{});
  for (std::size_t i = 0; i < t.peers.size(); ++i) {
    const topo::PeerInfo& p = t.peers[i];
    PeerCaps& c = gPeers[i];
    c.cls = p.relation == topo::Relation::kSelf ? sched::PeerClass::kSelf
            : p.relation == topo::Relation::kCoLocatedContainer ? sched::PeerClass::kContainer
                                                                : sched::PeerClass::kSameNamespace;
    c.ipcImport = p.ipcImport.yes;
    c.ipcExport = p.ipcExport.yes;
    c.vmm = p.vmmFd.yes;
  }
  g->ringShared_.reset(new std::atomic<std::uint64_t>[t.peers.size()]());
  g->ringMapped_.reset(new std::atomic<std::uint64_t>[t.peers.size()]());
  g->slotBytes_ = gBlock.get().value & ~std::size_t{4095};  // 64K to 4G (the setting's range)
  // Every rank takes part in the link's wire-up or none does (settings may differ per rank).
#if CGDR_HAVE_CUDA
  int want = gVmm.get() ? 1 : 0, all = 0;
#else
  int want = 0, all = 0;  // a host-only build has no GPU memory to share
#endif
  PMPI_Allreduce(&want, &all, 1, MPI_INT, MPI_MIN, world);
  if (all) {
    auto link = channel::cuda_vmm::Link::open(world, nonce, local);
    if (link.isOk()) g->link_ = std::move(link.value());
    else CGDR_LOG(kWarn, kCuda, "cuda-vmm channels disabled: %s", link.status().message().c_str());
  }
  g->activateHeapIfNeeded();
  return g;
}

// cudaMalloc memory: where a peer can open no legacy IPC handle of this rank. Pool memory
// (cudaMallocAsync) has no handle at all: wherever a co-located peer maps cuMem memory.
void GpuPaths::activateHeapIfNeeded() {
  if (!link_ || !base::cuda::usable()) return;
  bool malloc = false, async = false;
  for (std::size_t w = 0; w < gPeers.size() && !(malloc && async); ++w) {
    const PeerCaps& c = gPeers[w];
    if (c.cls == sched::PeerClass::kSelf || !c.vmm || !link_->connected(static_cast<int>(w))) continue;
    if (!async) {
      std::string why = "rank " + std::to_string(w) + " maps cuMem memory of this rank";
      mem::activateExportableAsync(why.c_str());
      async = true;
    }
    if (!malloc && c.cls == sched::PeerClass::kContainer && !c.ipcExport) {
      std::string why = "rank " + std::to_string(w) + " cannot open legacy CUDA IPC handles of this rank";
      mem::activateExportableMalloc(why.c_str());
      malloc = true;
    }
  }
}

GpuPaths::~GpuPaths() {
  mem::DeviceScope scope(home_.load(std::memory_order_relaxed));  // (where the registrations and mappings are)
#if CGDR_HAVE_CUDA
  for (auto& [p, mapped] : pinned_) cudaHostUnregister(p);
  (void)cudaGetLastError();
#endif
  ipcIn_.closeAll();
}

sched::PeerClass GpuPaths::peerClass(int w) const {
  return w >= 0 && w < static_cast<int>(gPeers.size()) ? gPeers[w].cls : sched::PeerClass::kSameNamespace;
}

sched::Caps GpuPaths::senderCaps(int w) const {
  sched::Caps c;
  if (w < 0 || w >= static_cast<int>(gPeers.size())) return c;
  bool linked = link_ && link_->connected(w) && gPeers[w].vmm;
  c.ipc = gPeers[w].ipcExport;
  c.vmmZc = linked;
  c.vmmStage = linked;
  return c;
}

sched::Caps GpuPaths::receiverCaps(int w, const GpuOffer& o, int device) {
  sched::Caps c;
  if (w < 0 || w >= static_cast<int>(gPeers.size())) return c;
  noteDevice(device);
  bool linked = link_ && link_->connected(w);
  c.ipc = (o.flags & GpuOffer::kIpc) && gPeers[w].ipcImport;
  c.vmmZc = (o.flags & GpuOffer::kZc) && linked;
  // The ring must map here (it may not, e.g. where the GPU holding it is not visible): mapped once.
  if ((o.flags & GpuOffer::kStage) && linked) {
    if (device < 0) device = homeDevice();
    // The link's answer for this ring and device never changes (mapped until finalize, or failed
    // for good): kept as (ring id, device, answer), asked again only for another ring or device.
    std::uint64_t key = o.ringId < (std::uint64_t{1} << 54) && device < 255
                            ? o.ringId << 9 | static_cast<std::uint64_t>(device + 1) << 1
                            : 0;  // beyond what the record holds: asked every time
    std::atomic<std::uint64_t>& seen = ringMapped_[w];
    std::uint64_t was = seen.load(std::memory_order_relaxed);
    if (key && (was & ~std::uint64_t{1}) == key) {
      c.vmmStage = was & 1;
    } else {
      c.vmmStage = peerRing(w, o.ringId, 1, device) != nullptr;
      if (key) seen.store(key | (c.vmmStage ? 1 : 0), std::memory_order_relaxed);
    }
  }
  return c;
}

void GpuPaths::offer(int w, const void* p, std::size_t n, const mem::MemInfo& known, GpuOffer* o) {
  int device = known.device;
  o->flags = 0;
  if (n == 0 || w < 0 || w >= static_cast<int>(gPeers.size())) return;
  noteDevice(device);
  Ring r;
  if (senderCaps(w).vmmStage && ring(w, device, &r)) {
    o->flags |= GpuOffer::kStage;
    o->ringId = r.id;
  }
  describe(w, p, n, known, o);
}

GpuPaths::Export* GpuPaths::exportOf(const void* p, std::size_t n, bool zc, const mem::MemInfo& known) {
  base::cuda::PointerAttrs a;
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (known.kind == mem::MemKind::kDevice && known.bufferId && known.base && addr >= known.base &&
      addr - known.base < known.extent) {  // classified by the caller just now
    a.type = base::cuda::PointerAttrs::Type::kDevice;
    a.bufferId = known.bufferId;
    a.rangeStart = known.base;
    a.rangeSize = known.extent;
  } else if (!base::cuda::queryPointer(p, true, &a)) {
    return nullptr;
  }
  if (a.type != base::cuda::PointerAttrs::Type::kDevice || !a.bufferId || !a.rangeStart) return nullptr;
  Export& e = exports_[a.rangeStart];
  if (e.bufferId != a.bufferId) {  // first use, or freed and allocated again at this address
    if (e.zcShared && link_) link_->unshare(e.bufferId);  // the old one is gone: peers drop it
    e = Export{};
    e.bufferId = a.bufferId;
    e.rangeSize = a.rangeSize;
    e.ipcOk = channel::cuda_ipc::exportHandle(a, p, n, &e.ipc);
  }
  if (zc && !e.zcChecked) {
    mem::Exportable x;
    e.zcChecked = true;
    e.zcOk = mem::exportable(p, n, &x);
    if (e.zcOk) {
      e.zcBase = x.base;
      e.zcSize = x.size;
      close(x.fd);
    }
  }
  return &e;
}

bool GpuPaths::zeroCopyable(int w, const void* p, std::size_t n, const mem::MemInfo& known) {
  if (n == 0 || !senderCaps(w).vmmZc) return false;
  auto addr = reinterpret_cast<std::uint64_t>(p);
  std::lock_guard lock(mutex_);
  Export* e = exportOf(p, n, true, known);
  return e && e->zcHolds(addr, n);
}

void GpuPaths::describe(int w, const void* p, std::size_t n, const mem::MemInfo& known, GpuOffer* o) {
  o->flags &= ~(GpuOffer::kIpc | GpuOffer::kZc | GpuOffer::kMps);
  if (n == 0 || w < 0 || w >= static_cast<int>(gPeers.size())) return;
  sched::Caps caps = senderCaps(w);
  if (!caps.ipc && !caps.vmmZc) return;
  auto addr = reinterpret_cast<std::uint64_t>(p);
  std::lock_guard lock(mutex_);
  if (const std::uint8_t* u = uuidOf(known.device)) {
    std::memcpy(o->gpu, u, sizeof o->gpu);
    if (mps_[known.device]) o->flags |= GpuOffer::kMps;
  }
  Export* found = exportOf(p, n, caps.vmmZc, known);
  if (!found) return;
  Export& e = *found;
  if (caps.ipc && e.ipcHolds(addr, n)) {
    o->ipc = e.ipc;
    o->ipc.offset = addr - e.ipc.base;
    o->flags |= GpuOffer::kIpc;
  }
  if (!caps.vmmZc || !e.zcHolds(addr, n)) return;
  const void* base = reinterpret_cast<const void*>(e.zcBase);
  std::size_t size = e.zcSize;
  auto id = link_->share(w, e.bufferId, size, [base, size] {
    mem::Exportable x;
    if (!mem::exportable(base, size, &x)) return -1;
    mem::heapMarkShared(base);  // the peer maps it until MPI_Finalize: the heap must keep it
    return x.fd;
  });
  if (!id.isOk()) return;
  if (!e.zcShared) {
    e.zcShared = true;
    if (++sharedSinceSweep_ >= kSweepEvery) releaseFreedShares();
  }
  o->zcId = id.value();
  o->zcSize = size;
  o->zcOffset = addr - e.zcBase;
  o->flags |= GpuOffer::kZc;
}

void GpuPaths::releaseFreedShares() {
  sharedSinceSweep_ = 0;
  for (auto it = exports_.begin(); it != exports_.end();) {
    const Export& e = it->second;
    base::cuda::PointerAttrs a;
    bool gone = e.zcShared && !(base::cuda::queryPointer(reinterpret_cast<const void*>(e.zcBase), true, &a) &&
                                a.type == base::cuda::PointerAttrs::Type::kDevice && a.bufferId == e.bufferId);
    if (!gone) {
      ++it;
      continue;
    }
    link_->unshare(e.bufferId);
    it = exports_.erase(it);
  }
}

const std::uint8_t* GpuPaths::uuidOf(int device) {
#if CGDR_HAVE_CUDA
  if (uuids_.empty()) {
    uuids_.resize(static_cast<std::size_t>(std::max(base::cuda::deviceCount(), 0)));
    mps_.assign(uuids_.size(), false);
    sharedSeen_.assign(uuids_.size(), false);
    for (std::size_t d = 0; d < uuids_.size(); ++d) {
      cudaDeviceProp p{};
      if (cudaGetDeviceProperties(&p, static_cast<int>(d)) == cudaSuccess)
        uuids_[d].assign(p.uuid.bytes, p.uuid.bytes + 16);
      mps_[d] = base::cuda::mpsShared(static_cast<int>(d));
    }
    (void)cudaGetLastError();
  }
  if (device >= 0 && device < static_cast<int>(uuids_.size()) && uuids_[device].size() == 16)
    return uuids_[device].data();
#else
  (void)device;
#endif
  return nullptr;
}

GpuPaths::Place GpuPaths::placeOf(const GpuOffer& o, int device) {
  static const std::uint8_t kNone[16] = {};
  if (std::memcmp(o.gpu, kNone, sizeof kNone) == 0) return Place::kUnknown;
  std::lock_guard lock(mutex_);
  const std::uint8_t* mine = uuidOf(device);
  if (mine && std::memcmp(mine, o.gpu, 16) == 0) {  // uuidOf succeeded: device indexes mps_
    if ((o.flags & GpuOffer::kMps) && mps_[device]) return Place::kSameGpuMps;
    if (!sharedSeen_[device]) {
      sharedSeen_[device] = true;
      mem::residentShared(device);
    }
    return Place::kSameGpu;
  }
  for (const auto& u : uuids_)
    if (u.size() == 16 && std::memcmp(u.data(), o.gpu, 16) == 0) return Place::kOtherVisible;
  return Place::kInvisible;
}

bool GpuPaths::smReaches(const GpuOffer& o, sched::Channel used, Place place, int device) {
  if (used == sched::Channel::kCudaVmmZc) return true;  // Link::mapping set access for `device`
  if (used != sched::Channel::kCudaIpc || device < 0) return false;
  if (place == Place::kSameGpu || place == Place::kSameGpuMps) return true;
  if (place != Place::kOtherVisible) return false;
#if CGDR_HAVE_CUDA
  std::lock_guard lock(mutex_);
  for (std::size_t d = 0; d < uuids_.size(); ++d) {
    if (uuids_[d].size() != 16 || std::memcmp(uuids_[d].data(), o.gpu, 16) != 0) continue;
    auto [it, fresh] = peerAccess_.try_emplace(device * 256 + static_cast<int>(d), false);
    if (fresh) {
      int can = 0;
      it->second = cudaDeviceCanAccessPeer(&can, device, static_cast<int>(d)) == cudaSuccess && can;
      (void)cudaGetLastError();
    }
    return it->second;
  }
#endif
  return false;
}

bool GpuPaths::pullable(int w, const void* p, std::size_t n, const mem::MemInfo& known) {
  if (n == 0 || w < 0 || w >= static_cast<int>(gPeers.size())) return false;
  sched::Caps caps = senderCaps(w);
  if (!caps.ipc && !caps.vmmZc) return false;
  auto addr = reinterpret_cast<std::uint64_t>(p);
  std::lock_guard lock(mutex_);
  const Export* e = exportOf(p, n, caps.vmmZc, known);
  if (!e) return false;
  return (caps.ipc && e->ipcHolds(addr, n)) || (caps.vmmZc && e->zcHolds(addr, n));
}

std::uint64_t GpuPaths::peerMemoryId(int w, sched::Channel c, std::uint64_t id) {
  if (!id || w < 0) return 0;
  auto peer = static_cast<std::uint64_t>(w) * 2;
  if (c == sched::Channel::kCudaIpc) return mem::copyId(peer + 1, id);  // buffer ids: unique per allocation
  // allocations and rings shared over the link: ids unique per link, mapped until finalize
  if (c == sched::Channel::kCudaVmmZc || c == sched::Channel::kCudaVmmStage) return mem::copyId(peer + 2, id);
  return 0;
}

int GpuPaths::homeDevice() {
  int d = home_.load(std::memory_order_relaxed);
  if (d >= 0) return d;
  noteDevice(currentDevice());
  return home_.load(std::memory_order_relaxed);
}

void* GpuPaths::peerAddress(int w, const GpuOffer& o, sched::Channel c, int device) {
  if (device < 0) device = homeDevice();
  mem::DeviceScope scope(device);
  if (c == sched::Channel::kCudaIpc && (o.flags & GpuOffer::kIpc) && w >= 0 &&
      w < static_cast<int>(gPeers.size()) && gPeers[w].ipcImport)
    return ipcIn_.open(w, o.ipc);
  if (c == sched::Channel::kCudaVmmZc && (o.flags & GpuOffer::kZc) && link_ && o.zcOffset <= o.zcSize) {
    char* base = static_cast<char*>(link_->mapping(w, o.zcId, o.zcSize, device));
    return base ? base + o.zcOffset : nullptr;
  }
  return nullptr;
}

bool GpuPaths::ring(int w, int device, Ring* out) {
  if (!link_ || !link_->connected(w)) return false;
  if (std::uint64_t known = ringShared_[w].load(std::memory_order_acquire)) {
    out->base = ringBase_.load(std::memory_order_relaxed);
    out->id = known;
    out->slotBytes = slotBytes_;
    return true;
  }
  std::lock_guard lock(mutex_);
  if (ringFailed_) return false;
  mem::DeviceScope scope(device);
  mem::VmmBuffer* r = link_->ring(device, slots_, slotBytes_);
  if (!r) {
    CGDR_LOG(kWarn, kCuda, "cannot create the cuMem staging ring on GPU %d: cuda-vmm-stage disabled", device);
    ringFailed_ = true;
    return false;
  }
  auto id = link_->share(w, kRingKey, r->size(), [r] { return r->exportFd(); });
  if (!id.isOk()) return false;
  out->base = static_cast<char*>(r->data());
  out->id = id.value();
  out->slotBytes = slotBytes_;
  ringBase_.store(out->base, std::memory_order_relaxed);
  ringShared_[w].store(out->id, std::memory_order_release);
  return true;
}

void* GpuPaths::peerRing(int w, std::uint64_t id, std::size_t need, int device) {
  if (!link_) return nullptr;
  if (device < 0) device = homeDevice();
  mem::DeviceScope scope(device);
  return link_->mapping(w, id, need, device);
}

void* GpuPaths::pin(void* p, std::size_t n) {
#if CGDR_HAVE_CUDA
  std::lock_guard lock(mutex_);
  auto [it, fresh] = pinned_.try_emplace(p, nullptr);
  if (!fresh) return it->second;
  mem::DeviceScope scope(homeDevice());  // (a registration goes with the context it was made in)
  if (cudaHostRegister(p, n, cudaHostRegisterPortable | cudaHostRegisterMapped) != cudaSuccess) {
    (void)cudaGetLastError();  // already registered by someone, or not allowed: copies still work
    CGDR_LOG(kDebug, kCuda, "cudaHostRegister of %zu bytes of shared memory failed", n);
    return nullptr;
  }
  mem::noteGpuState();
  ++pinnedOk_;
  void* dev = nullptr;
  if (cudaHostGetDevicePointer(&dev, p, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    dev = nullptr;
  }
  it->second = dev;
  return dev;
#else
  (void)p;
  (void)n;
  return nullptr;
#endif
}

}  // namespace cgdr::engine
