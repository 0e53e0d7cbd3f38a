#include "channel/shm/endpoint.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/config.hpp"
#include "base/ids.hpp"
#include "base/log.hpp"
#include "topo/detect.hpp"

namespace cgdr::channel::shm {
namespace {

// The segment's geometry: each count and size has a range (a value outside it is refused with a
// warning and the default used), so none overflows the 32-bit fields of the layout.
base::Setting<base::Bytes> gRing("CGDR_SHM_RING_BYTES", "64K", "bytes",
                                 "Message ring per ordered pair of co-located ranks (envelopes and eager data), "
                                 "rounded down to a multiple of 64.",
                                 base::SizeRange{4096, std::size_t{1} << 30});
base::Setting<long long> gCtl("CGDR_SHM_CTL_SLOTS", "256", "records",
                              "Control-ring slots per ordered pair.", base::IntRange{16, 1 << 20});
base::Setting<long long> gChunks("CGDR_SHM_CHUNKS", "64", "chunks",
                                 "Bulk chunks per rank for large messages (the host rail's tails too: with GPU "
                                 "traffic both ways 16 chunks of 256 KiB held its bibw on nvidia-h200-x2 at 520-620 "
                                 "GB/s, 64 let it reach ~800).",
                                 base::IntRange{2, 1 << 16});
base::Setting<base::Bytes> gChunkBytes("CGDR_SHM_CHUNK_BYTES", "256K", "bytes",
                                       "Size of one bulk chunk (the pipelining unit of large copies, host and "
                                       "cuda-staged), rounded down to a multiple of 64.",
                                       base::SizeRange{4096, std::size_t{1} << 30});
base::Setting<base::Bytes> gEager("CGDR_SHM_EAGER_LIMIT", "8K", "bytes",
                                  "Largest message sent eagerly through the ring; larger ones use a rendezvous.");
base::Setting<base::Bytes> gCredit("CGDR_SHM_EAGER_CREDIT", "1M", "bytes",
                                   "Unmatched eager bytes one sender may leave at a receiver before it switches to "
                                   "rendezvous (bounds unexpected-message memory).");
base::Setting<long long> gDevSlots("CGDR_CUDA_STAGE_SLOTS", "4", "blocks",
                                   "Blocks of each rank's cuMem staging ring (cuda-vmm-stage).",
                                   base::IntRange{2, 4096});
base::Setting<long long> gDescSlots("CGDR_SHM_DESC_SLOTS", "256", "slots",
                                    "Slots per rank in which a receive describes its GPU buffer to a sender that "
                                    "copies into it (256 bytes each); a receive that finds none free pulls the "
                                    "bytes instead. 0: every receive matched from its envelope pulls (one posted "
                                    "before its message describes its buffer in its advert).",
                                    base::IntRange{0, 1 << 16});
base::Setting<bool> gCma("CGDR_SHM_CMA", "1", "", "Single-copy large messages with process_vm_readv where a probe shows it works.");

std::uint64_t gProbe = 0;  // read by peers to test single copy

// The key of the message ring from local rank `sender` to local rank `receiver` (both sides
// derive it from the job's nonce). Never 0 (its low bit set), so a zero-filled ring never matches
// position 0.
std::uint64_t ringKey(std::uint64_t nonce, std::uint32_t receiver, std::uint32_t sender) {
  return base::mix64(nonce ^ (std::uint64_t{receiver} << 32 | sender) * base::kGoldenGamma) | 1;
}

template <class T>
T* at(char* base, std::size_t off) {
  return reinterpret_cast<T*>(base + off);
}

// The first free one of n slots (busyOf(s): slot s's busy word) from *next on, marked busy and
// *next moved past it; -1 if none is free. Only the owner marks its slots busy (peers only free
// them), so a slot seen free stays free.
template <class BusyOf>
int takeFree(std::uint32_t n, std::uint32_t* next, BusyOf busyOf) {
  for (std::uint32_t k = 0; k < n; ++k) {
    std::uint32_t s = (*next + k) % n;
    auto busy = std::atomic_ref<std::uint32_t>(busyOf(s));
    if (busy.load(std::memory_order_acquire) == 0) {
      busy.store(1, std::memory_order_relaxed);
      *next = s + 1;
      return static_cast<int>(s);
    }
  }
  return -1;
}

// A peer's slot copied out: its owner may take it again (release: after the copy-out's reads).
void setFree(std::uint32_t& busy) { std::atomic_ref<std::uint32_t>(busy).store(0, std::memory_order_release); }

std::string segmentName(std::uint64_t nonce, int worldRank) {
  char n[96];
  std::snprintf(n, sizeof n, "%s%016llx-ep-%d", base::shmPrefix().c_str(), static_cast<unsigned long long>(nonce),
                worldRank);
  return n;
}

// Probes process_vm_readv on the peer's advertised probe word.
bool probeCma(int pid, std::uint64_t addr, std::uint64_t expect) {
  std::uint64_t v = 0;
  iovec local{&v, sizeof v};
  iovec remote{reinterpret_cast<void*>(addr), sizeof v};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof v) && v == expect;
}

}  // namespace

Config configFromSettings() {
  Config c;
  // (Each within its setting's range, so the casts keep every value.)
  c.ringBytes = static_cast<std::uint32_t>(gRing.get().value & ~std::size_t{63});
  c.ctlSlots = static_cast<std::uint32_t>(gCtl.get());
  c.chunks = static_cast<std::uint32_t>(gChunks.get());
  c.chunkBytes = static_cast<std::uint32_t>(gChunkBytes.get().value & ~std::size_t{63});
  c.devSlots = static_cast<std::uint32_t>(gDevSlots.get());
  c.descSlots = static_cast<std::uint32_t>(gDescSlots.get());
  c.cma = gCma.get();
  return c;
}

std::size_t eagerLimit() {
  std::size_t ring = configFromSettings().ringBytes;
  return std::min(gEager.get().value, ring / 4 - sizeof(MsgHeader));
}
std::size_t eagerCredit() { return std::max(gCredit.get().value, eagerLimit()); }

base::Result<std::unique_ptr<Endpoint>> Endpoint::open(MPI_Comm world, std::uint64_t nonce,
                                                       const std::vector<int>& localWorld, const Config& cfg) {
  std::unique_ptr<Endpoint> ep(new Endpoint);
  int me = 0, size = 0;
  PMPI_Comm_rank(world, &me);
  PMPI_Comm_size(world, &size);
  ep->geo_ = {static_cast<std::uint32_t>(localWorld.size()), cfg.ringBytes, cfg.ctlSlots, cfg.chunks, cfg.chunkBytes,
              cfg.devSlots, cfg.descSlots};
  ep->byWorld_.assign(size, nullptr);
  const std::string& dir = base::shmDir();
  std::uint32_t myLocal = 0;
  for (std::uint32_t i = 0; i < localWorld.size(); ++i)
    if (localWorld[i] == me) myLocal = i;
  bool active = localWorld.size() > 0;
  base::Status failure;

  // Step 1: create and fill my segment.
  if (active) {
    ep->maps_.resize(localWorld.size());  // (every later step may look at its own map)
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);  // let co-located peers read us (yama)
    if (gProbe == 0) gProbe = base::randomWord();
    auto mine = base::ShmFile::open(dir, segmentName(nonce, me), ep->geo_.total());
    if (mine.isOk()) {
      auto* h = static_cast<SegmentHeader*>(mine.value().data());
      h->magic = kSegmentMagic;
      h->nonce = nonce;
      h->version = kLayoutVersion;
      h->worldRank = me;
      h->localCount = ep->geo_.localCount;
      h->ringBytes = cfg.ringBytes;
      h->ctlSlots = cfg.ctlSlots;
      h->chunks = cfg.chunks;
      h->chunkBytes = cfg.chunkBytes;
      h->pid = static_cast<std::int32_t>(getpid());
      h->probeAddr = reinterpret_cast<std::uint64_t>(&gProbe);
      h->probeValue = gProbe;
      h->devSlots = cfg.devSlots;
      h->descSlots = cfg.descSlots;
      h->features = cfg.features;
      ep->maps_[myLocal] = std::move(mine.value());
    } else {
      failure = mine.status();
    }
  }
  int ok = failure.isOk() ? 1 : 0, allOk = 0;
  PMPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_MIN, world);
  // Step 2: map every co-located peer's segment and check its header.
  if (allOk && active) {
    for (std::uint32_t i = 0; i < localWorld.size() && failure.isOk(); ++i) {
      if (i == myLocal) continue;
      auto seg = base::ShmFile::open(dir, segmentName(nonce, localWorld[i]), ep->geo_.total(), false);
      if (!seg.isOk()) {
        failure = seg.status();
        break;
      }
      auto* h = static_cast<SegmentHeader*>(seg.value().data());
      if (h->magic != kSegmentMagic || h->nonce != nonce || h->version != kLayoutVersion ||
          h->worldRank != localWorld[i] || h->localCount != ep->geo_.localCount || h->ringBytes != cfg.ringBytes ||
          h->ctlSlots != cfg.ctlSlots || h->chunks != cfg.chunks || h->chunkBytes != cfg.chunkBytes ||
          h->devSlots != cfg.devSlots || h->descSlots != cfg.descSlots)
        failure = base::Status(base::Errc::kProtocol, "segment of rank " + std::to_string(localWorld[i]) +
                                                          " does not match this job's layout (same CGDR_SHM_* settings?)");
      ep->maps_[i] = std::move(seg.value());
    }
  }
  ok = failure.isOk() ? 1 : 0;
  PMPI_Allreduce(&ok, &allOk, 1, MPI_INT, MPI_MIN, world);
  // Step 3: everyone has mapped everything: drop the names and the open-time locks; then each
  // owner holds its segment exclusively, so peers can tell when it is gone (alive()).
  if (active && !ep->maps_.empty() && ep->maps_[myLocal].data()) {
    for (std::uint32_t i = 0; i < ep->maps_.size(); ++i)
      if (i != myLocal && ep->maps_[i].data()) flock(ep->maps_[i].fd(), LOCK_UN);
    ep->maps_[myLocal].unlink();
  }
  PMPI_Barrier(world);
  if (active && ep->maps_[myLocal].data()) {
    auto* h = static_cast<SegmentHeader*>(ep->maps_[myLocal].data());
    if (flock(ep->maps_[myLocal].fd(), LOCK_EX | LOCK_NB) == 0) h->lockHeld = 1;  // liveness can be probed
  }
  PMPI_Barrier(world);
  if (!allOk) {
    if (!failure.isOk()) CGDR_LOG(kWarn, kShm, "shared-memory wire-up failed: %s", failure.message().c_str());
    return failure.isOk() ? base::Status(base::Errc::kSystem, "shared-memory wire-up failed on another rank") : failure;
  }
  if (!active) return ep;

  ep->mine_ = static_cast<char*>(ep->maps_[myLocal].data());
  const auto& myRec = topo::locality().me;
  for (std::uint32_t i = 0; i < localWorld.size(); ++i) {
    auto p = std::make_unique<Peer>();
    p->worldRank = localWorld[i];
    p->local = i;
    char* theirs = static_cast<char*>(ep->maps_[i].data());
    p->segment = theirs;
    p->out = MsgRing(at<RingHeader>(theirs, ep->geo_.msgRingOffset(myLocal)),
                     theirs + ep->geo_.msgRingOffset(myLocal) + sizeof(RingHeader), cfg.ringBytes,
                     ringKey(nonce, i, myLocal));
    p->ctlOut = CtlRing(at<RingHeader>(theirs, ep->geo_.ctlRingOffset(myLocal)),
                        at<CtlRecord>(theirs, ep->geo_.ctlRingOffset(myLocal) + sizeof(RingHeader)), cfg.ctlSlots);
    p->in = MsgRing(at<RingHeader>(ep->mine_, ep->geo_.msgRingOffset(i)),
                    ep->mine_ + ep->geo_.msgRingOffset(i) + sizeof(RingHeader), cfg.ringBytes,
                    ringKey(nonce, myLocal, i));
    p->ctlIn = CtlRing(at<RingHeader>(ep->mine_, ep->geo_.ctlRingOffset(i)),
                       at<CtlRecord>(ep->mine_, ep->geo_.ctlRingOffset(i) + sizeof(RingHeader)), cfg.ctlSlots);
    p->advertsIn = AdvertBoard(at<AdvertSlot>(ep->mine_, ep->geo_.advertOffset(i)), kAdvertSlots);
    p->advertsOut = AdvertReader(at<AdvertSlot>(theirs, ep->geo_.advertOffset(myLocal)), kAdvertSlots);
    auto* h = static_cast<SegmentHeader*>(static_cast<void*>(theirs));
    p->features = h->features;
    // (the locality table names every co-located rank once detection ran; without it, no CMA)
    const auto& recs = topo::locality().records;
    bool sameNs = static_cast<std::size_t>(p->worldRank) < recs.size() && recs[p->worldRank].nsPid == myRec.nsPid;
    if (cfg.cma && (i == myLocal || sameNs)) {
      p->pid = h->pid;
      p->cma = probeCma(h->pid, h->probeAddr, h->probeValue);
    }
    ep->byWorld_[p->worldRank] = p.get();
    ep->peers_.push_back(std::move(p));
  }
  CGDR_LOG(kInfo, kShm, "shm endpoint: %zu co-located ranks, segment %zu bytes", localWorld.size(), ep->geo_.total());
  return ep;
}

Endpoint::~Endpoint() = default;

int Endpoint::takeChunks(std::uint32_t n, std::uint32_t keepFree) {
  if (n == 0) n = 1;
  if (n > geo_.chunks) return -1;
  auto* flags = at<ChunkFlag>(mine_, geo_.flagsOffset());
  auto freeAt = [&](std::uint32_t c) {
    return std::atomic_ref<std::uint32_t>(flags[c].busy).load(std::memory_order_acquire) == 0;
  };
  if (keepFree) {
    std::uint32_t free = 0;
    for (std::uint32_t c = 0; c < geo_.chunks; ++c) free += freeAt(c) ? 1 : 0;
    if (free < n + keepFree) return -1;
  }
  for (std::uint32_t k = 0; k < geo_.chunks; ++k) {
    std::uint32_t c = (nextChunk_ + k) % geo_.chunks;
    if (c + n > geo_.chunks) continue;
    std::uint32_t j = 0;
    while (j < n && freeAt(c + j)) ++j;
    if (j < n) continue;
    // This rank alone marks its chunks busy (peers only clear them): free now stays free.
    for (j = 0; j < n; ++j) std::atomic_ref<std::uint32_t>(flags[c + j].busy).store(1, std::memory_order_relaxed);
    nextChunk_ = c + n;
    return static_cast<int>(c);
  }
  return -1;
}

int Endpoint::takeDevSlot() {
  auto* flags = at<ChunkFlag>(mine_, geo_.devFlagsOffset());
  return takeFree(geo_.devSlots, &nextDevSlot_, [&](std::uint32_t s) -> std::uint32_t& { return flags[s].busy; });
}

int Endpoint::takeDesc() {
  return takeFree(geo_.descSlots, &nextDesc_,
                  [&](std::uint32_t s) -> std::uint32_t& { return descSlot(mine_, s)->busy; });
}

void Endpoint::releasePeerDesc(const Peer& p, std::uint32_t s) const { setFree(descSlot(p.segment, s)->busy); }

void Endpoint::releasePeerDevSlot(const Peer& p, std::uint32_t s) const {
  setFree(at<ChunkFlag>(p.segment, geo_.devFlagsOffset())[s].busy);
}

void Endpoint::releasePeerChunk(const Peer& p, std::uint32_t c) const {
  setFree(at<ChunkFlag>(p.segment, geo_.flagsOffset())[c].busy);
}

bool Endpoint::alive(Peer& p) {
  if (p.dead) return false;
  int fd = maps_[p.local].fd();
  if (fd < 0 || p.segment == mine_) return true;
  if (reinterpret_cast<SegmentHeader*>(p.segment)->lockHeld != 1) return true;  // owner holds no lock
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {  // the owner's exclusive lock is gone: so is the owner
    flock(fd, LOCK_UN);
    p.dead = true;
    return false;
  }
  return true;
}

}  // namespace cgdr::channel::shm
