// Classification of one peer rank relative to this one: relation (same namespace, co-located
// container, remote) and what the pair can use, every "no" with a reason. A pure function of the
// two identity records, so the rules are unit-tested as a table.
#pragma once
#include <cstdint>
#include <string>

#include "topo/identity.hpp"

namespace cgdr::topo {

enum class LocalityMode { kContainer, kHostname, kOff };
enum class Relation { kSelf, kSameNamespace, kCoLocatedContainer, kRemote };
const char* relationName(Relation r);
const char* modeName(LocalityMode m);

// What every rank publishes to all through the real MPI (ranks outside the shared list too).
struct HostKey {
  std::uint64_t bootHash;
  std::uint64_t hostHash;
  std::uint32_t uid;
  std::int32_t rank;
};
HostKey hostKeyOf(const IdentityRecord& r);

struct Capability {
  bool yes = false;
  std::string why;  // empty when yes
  static Capability ok() { return {true, ""}; }
  static Capability no(std::string why) { return {false, std::move(why)}; }
};

struct PeerInfo {
  int rank = -1;
  Relation relation = Relation::kRemote;
  Capability engine;     // served by cgdr's co-located engine (depends on the locality mode)
  Capability shm;        // shared memory attachable
  Capability seesPeer;   // the peer's process is visible in this rank's PID namespace
  Capability seenByPeer; // this rank's process is visible in the peer's PID namespace
  Capability ipcImport;  // this rank can open the peer's legacy CUDA IPC handles (GPUs + seesPeer)
  Capability ipcExport;  // the peer can open this rank's legacy CUDA IPC handles (GPUs + seenByPeer)
  Capability vmmFd;      // cuMem allocations shareable as file descriptors over a Unix socket
  Capability sameGpu;
  Capability nvlink;
  Capability sameNuma;
  std::string gpuPath;   // "same GPU", "NVLink", "PIX", "PXB", "PHB", "SYS" or "n/a"
};

// `peer` is the peer's record when it is in this rank's shared-memory list, else nullptr.
PeerInfo classifyPeer(LocalityMode mode, const IdentityRecord& me, const HostKey& peerKey, const IdentityRecord* peer);

// PCIe relation of two devices from their /sys/devices paths and NUMA nodes.
std::string pciRelation(const std::string& a, const std::string& b, int numaA, int numaB);

}  // namespace cgdr::topo
