// cuda-vmm: GPU memory shared between co-located ranks in any namespaces. Each pair keeps a
// connected Unix socket (made at start-up through the shared directory, whose name is removed
// at once) that carries file descriptors of cuMem allocations (SCM_RIGHTS), each sent once per
// peer: the sender's staging ring, and users' own exportable allocations (zero copy). The
// receiver maps what it gets and pulls over NVLink.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/status.hpp"
#include "mem/vmm.hpp"

namespace cgdr::channel::cuda_vmm {

class Link {
 public:
  // Collective over `world`; `local` are the co-located world ranks (this one included).
  static base::Result<std::unique_ptr<Link>> open(MPI_Comm world, std::uint64_t nonce, const std::vector<int>& local);
  ~Link();

  // This rank's staging ring on `device`, created on first use: `slots` blocks of `slotBytes`.
  mem::VmmBuffer* ring(int device, std::size_t slots, std::size_t slotBytes);
  // Makes an allocation known to a peer (its fd, made by makeFd only the first time, is sent
  // once); returns the allocation's id. `key` must be unique per allocation over the job's life.
  base::Result<std::uint64_t> share(int peer, std::uint64_t key, std::size_t size, const std::function<int()>& makeFd);
  // The mapping of a peer's allocation `id` (receiving its fd if needed), accessible from device.
  void* mapping(int peer, std::uint64_t id, std::size_t size, int device);
  bool connected(int peer) const;
  // The allocation shared under `key` is gone (freed by this process): every peer it was sent to
  // is told to drop its mapping, which otherwise holds the GPU memory until MPI_Finalize. Only
  // once every message naming it has completed. Returns how many peers were told.
  std::size_t unshare(std::uint64_t key);
  // Reads what peers sent without waiting (fds, releases), so that releases take effect even
  // where no new allocation is mapped.
  void drain();
  struct Counts {
    std::size_t held = 0;      // peers' allocations mapped here now
    std::size_t released = 0;  // mappings dropped because their peer freed the memory
    std::size_t pending = 0;   // fds received and not mapped (yet)
  };
  Counts counts();

 private:
  Link() = default;
  struct Imported {
    std::size_t size;
    mem::VmmBuffer map;
  };
  // One message from the peer (waiting for it, or not: *got says whether one came).
  base::Status receiveFrom(int peer, bool wait, bool* got);

  std::map<int, int> socks_;                                    // peer world rank -> socket
  std::vector<char> connected_;  // by world rank: has a socket (asked on every GPU message, no lock)
  std::map<std::pair<int, std::uint64_t>, std::uint64_t> sent_; // (peer, key) -> id sent
  std::map<std::pair<int, std::uint64_t>, Imported> imported_;  // (peer, id) -> mapping
  std::map<std::pair<int, std::uint64_t>, std::pair<int, std::size_t>> pendingFds_;  // received, unmapped
  std::map<std::pair<int, std::uint64_t>, bool> failed_;        // could not be mapped here
  std::map<int, std::uint64_t> lastFdId_;                       // peer -> highest id of an fd read
  std::unique_ptr<mem::VmmBuffer> ring_;
  std::uint64_t nextId_ = 1;
  std::size_t released_ = 0;
  std::mutex mutex_;
};

}  // namespace cgdr::channel::cuda_vmm
