// The shm channel's endpoint: this rank's segment and its co-located peers' segments, mapped at
// start-up (create, everyone maps, everyone unlinks: nothing is left behind, even after kill -9),
// the rings to and from each peer, the bulk chunks, a single-copy (CMA) probe per pair and a
// liveness probe per peer.
#pragma once
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "base/shm_file.hpp"
#include "base/status.hpp"
#include "channel/shm/advert.hpp"
#include "channel/shm/ring.hpp"

namespace cgdr::channel::shm {

struct Config {
  std::uint32_t ringBytes;
  std::uint32_t ctlSlots;
  std::uint32_t chunks;
  std::uint32_t chunkBytes;
  std::uint32_t devSlots;  // blocks of the cuMem staging ring (their flags live here)
  std::uint32_t descSlots;  // description slots (0: a receiver describes its buffer in a bulk chunk)
  bool cma;  // try single copy (process_vm_readv) where permitted
  std::uint64_t features = 0;  // kFeature* bits this rank announces in its segment header
};
Config configFromSettings();
// Largest eager message (bytes) and the per-sender credit of unmatched eager bytes.
std::size_t eagerLimit();
std::size_t eagerCredit();

// One co-located peer (this rank included) as seen from here.
struct Peer {
  int worldRank = -1;
  std::uint32_t local = 0;   // index among the co-located ranks
  MsgRing out, in;           // messages to / from the peer
  CtlRing ctlOut, ctlIn;     // control records to / from the peer
  AdvertBoard advertsIn;     // this rank's receives advertised to the peer (in this rank's segment)
  AdvertReader advertsOut;   // the peer's receives advertised to this rank (in its segment)
  char* segment = nullptr;   // the peer's mapped segment (its chunks live there)
  bool cma = false;          // this rank can read the peer's memory with process_vm_readv
  std::uint64_t features = 0;  // the kFeature* bits the peer announced (layout.hpp)
  int pid = -1;              // the peer's pid in this rank's namespace (when cma)
  std::uint32_t seqOut = 0, seqIn = 0;
  std::uint64_t eagerSent = 0;  // eager bytes sent; credit: out.withinCredit()
  bool advertsInTime = false;   // a send to the peer lately found its receive advertised (engine)
  // CGDR_TRACE_GPU only (engine): when this rank last told the peer that its copy was done, and
  // when the peer sent the last such notice this rank handled (CLOCK_MONOTONIC: one clock a host).
  std::atomic<std::uint64_t> doneSentNs{0}, doneSeenNs{0};
  // The host rail's governor for messages from the peer with traffic both ways (engine:
  // sched::railFactorAfter).
  double railFactor = 1;
  bool dead = false;
  std::mutex sendLock;       // serialises this rank's threads producing to the peer
};

class Endpoint {
 public:
  // Collective over `world` (all ranks take part, also those with no co-located peer).
  static base::Result<std::unique_ptr<Endpoint>> open(MPI_Comm world, std::uint64_t nonce,
                                                      const std::vector<int>& localWorldRanks, const Config& cfg);
  ~Endpoint();

  // The peer with this world rank, or nullptr if it is not co-located.
  Peer* peer(int worldRank) { return worldRank >= 0 && worldRank < static_cast<int>(byWorld_.size()) ? byWorld_[worldRank] : nullptr; }
  std::vector<std::unique_ptr<Peer>>& peers() { return peers_; }
  const Geometry& geometry() const { return geo_; }
  std::size_t segmentBytes() const { return geo_.total(); }
  char* segment() const { return mine_; }  // this rank's

  // This rank's bulk chunks (it is their only producer).
  int takeChunk() { return takeChunks(1); }
  // n neighbouring chunks at once, one block of n x chunkBytes (the host rail's larger blocks:
  // fewer copies, each with its fixed cost), never wrapping past the last; the first, or -1.
  // keepFree: only if that many chunks stay free besides (for the other messages' chunks, and the
  // buffer descriptions a receiver puts in one).
  int takeChunks(std::uint32_t n, std::uint32_t keepFree = 0);
  // How many chunks a block of len bytes (len > 0) written from the start of a chunk spans.
  std::uint32_t chunksOf(std::uint64_t len) const {
    return len <= geo_.chunkBytes ? 1 : static_cast<std::uint32_t>((len + geo_.chunkBytes - 1) / geo_.chunkBytes);
  }
  char* chunk(int c) const { return mine_ + geo_.chunkOffset(static_cast<std::uint32_t>(c)); }
  // A peer's chunk, and marking it copied out.
  char* peerChunk(const Peer& p, std::uint32_t c) const { return p.segment + geo_.chunkOffset(c); }
  void releasePeerChunk(const Peer& p, std::uint32_t c) const;
  void releasePeerChunks(const Peer& p, std::uint32_t c, std::uint32_t n) const {
    for (std::uint32_t k = 0; k < n; ++k) releasePeerChunk(p, c + k);
  }
  // This rank's description slots (layout.hpp, DescSlot): a free one marked busy, or -1; its bytes;
  // a peer's, and freeing it once copied out.
  int takeDesc();
  char* desc(int s) const { return descSlot(mine_, static_cast<std::uint32_t>(s))->payload; }
  const char* peerDesc(const Peer& p, std::uint32_t s) const { return descSlot(p.segment, s)->payload; }
  void releasePeerDesc(const Peer& p, std::uint32_t s) const;
  // The same for the blocks of the cuMem staging ring (the data is in GPU memory; flags here).
  int takeDevSlot();
  void releasePeerDevSlot(const Peer& p, std::uint32_t s) const;
  // Liveness: false once the peer's process is gone (its lock on its segment vanished).
  bool alive(Peer& p);

 private:
  Endpoint() = default;
  DescSlot* descSlot(char* segment, std::uint32_t s) const {
    return reinterpret_cast<DescSlot*>(segment + geo_.descOffset()) + s;
  }
  Geometry geo_{};
  char* mine_ = nullptr;
  std::vector<std::unique_ptr<Peer>> peers_;
  std::vector<Peer*> byWorld_;
  std::vector<base::ShmFile> maps_;   // [local index]; mine at my index
  std::vector<int> lockFds_;          // per local index: fd to probe the owner's lock
  std::uint32_t nextChunk_ = 0, nextDevSlot_ = 0, nextDesc_ = 0;
};

}  // namespace cgdr::channel::shm
