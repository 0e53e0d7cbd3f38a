#include "topo/peer.hpp"

#include <cstring>
#include <sstream>
#include <vector>

namespace cgdr::topo {
namespace {

std::uint64_t hashString(const char* s) {
  std::uint64_t h = 1469598103934665603ull;
  for (; *s; ++s) h = (h ^ static_cast<unsigned char>(*s)) * 1099511628211ull;
  return h;
}

bool inChain(std::uint64_t ns, const IdentityRecord& r) {
  for (std::uint32_t i = 0; i < r.pidNsDepth; ++i)
    if (r.pidNsChain[i] == ns) return true;
  return false;
}

// Can a process in `viewer`'s PID namespace see `target`? Only if target's namespace is the
// viewer's or a descendant of it (the viewer's namespace is among target's ancestors).
Capability sees(const IdentityRecord& viewer, const IdentityRecord& target, const char* direction) {
  if (viewer.nsPid != 0 && viewer.nsPid == target.nsPid) return Capability::ok();
  if (inChain(viewer.nsPid, target)) return Capability::ok();
  if (!target.hasFlag(kFlagPidNsChain))
    return Capability::no(std::string(direction) + ": PID namespace ancestry unknown (not permitted to read it)");
  return Capability::no(std::string(direction) + ": separate PID namespaces (the importer cannot see the exporter)");
}

const GpuRecord* currentGpu(const IdentityRecord& r) {
  return r.currentGpu >= 0 ? &r.gpus[r.currentGpu] : nullptr;
}

std::vector<std::string> split(const std::string& p) {
  std::vector<std::string> out;
  std::stringstream ss(p);
  std::string item;
  while (std::getline(ss, item, '/'))
    if (!item.empty()) out.push_back(item);
  return out;
}

bool linked(const GpuRecord& a, const GpuRecord& b) {
  for (std::uint32_t l = 0; l < a.linkCount; ++l)
    if (std::strcmp(a.linkPeers[l], b.busId) == 0) return true;
  return false;
}

void gpuCapabilities(const IdentityRecord& me, const IdentityRecord& peer, PeerInfo& p) {
  const GpuRecord* a = currentGpu(me);
  const GpuRecord* b = currentGpu(peer);
  if (!a || !b) {
    const char* why = !a ? "this rank has no current GPU" : "the peer has no current GPU";
    p.sameGpu = p.nvlink = Capability::no(why);
    p.gpuPath = "n/a";
    return;
  }
  if (std::memcmp(a->uuid, b->uuid, 16) == 0) {
    p.sameGpu = Capability::ok();
    p.nvlink = Capability::no("same GPU");
    p.gpuPath = "same GPU";
    return;
  }
  p.sameGpu = Capability::no("different GPUs (" + std::string(a->busId) + ", " + b->busId + ")");
  if (linked(*a, *b) || linked(*b, *a)) {
    p.nvlink = Capability::ok();
    p.gpuPath = "NVLink";
    return;
  }
  bool known = me.hasFlag(kFlagNvmlLinks) && peer.hasFlag(kFlagNvmlLinks);
  p.nvlink = Capability::no(known ? "no NVLink between the two GPUs" : "NVLink unknown: NVML unavailable");
  p.gpuPath = pciRelation(a->pciPath, b->pciPath, a->numa, b->numa);
}

}  // namespace

const char* relationName(Relation r) {
  switch (r) {
    case Relation::kSelf: return "self";
    case Relation::kSameNamespace: return "same namespace";
    case Relation::kCoLocatedContainer: return "co-located container";
    case Relation::kRemote: return "remote";
  }
  return "?";
}

const char* modeName(LocalityMode m) {
  return m == LocalityMode::kContainer ? "container" : m == LocalityMode::kHostname ? "hostname" : "off";
}

HostKey hostKeyOf(const IdentityRecord& r) {
  return {hashString(r.bootId), hashString(r.hostname), r.uid, r.rank};
}

std::string pciRelation(const std::string& a, const std::string& b, int numaA, int numaB) {
  auto pa = split(a), pb = split(b);
  if (pa.empty() || pb.empty()) return "unknown";
  if (pa[0] != pb[0]) return (numaA >= 0 && numaA == numaB) ? "PHB" : "SYS";
  size_t common = 0;
  while (common < pa.size() && common < pb.size() && pa[common] == pb[common]) ++common;
  // Shared components beyond the root complex are PCIe bridges/switch ports above both.
  if (common <= 1) return "PHB";
  if (common + 1 == pa.size() && common + 1 == pb.size()) return "PIX";
  return "PXB";
}

PeerInfo classifyPeer(LocalityMode mode, const IdentityRecord& me, const HostKey& key, const IdentityRecord* peer) {
  PeerInfo p;
  p.rank = key.rank;
  HostKey mine = hostKeyOf(me);
  bool sameHost = key.bootHash == mine.bootHash;
  const char* remote = "remote: another host (boot_id differs)";
  if (key.rank == me.rank) p.relation = Relation::kSelf;
  else if (!sameHost) p.relation = Relation::kRemote;
  else if (peer && peer->nsPid == me.nsPid && peer->nsMnt == me.nsMnt) p.relation = Relation::kSameNamespace;
  else p.relation = Relation::kCoLocatedContainer;

  // Shared memory: the peer mapped this rank's locality segment, on this host, as this user.
  if (!sameHost) p.shm = Capability::no(peer ? "the shared directory is shared with another host" : remote);
  else if (key.uid != me.uid || (peer && peer->uid != me.uid))
    p.shm = Capability::no("different uid (" + std::to_string(key.uid) + "): never attached");
  else if (!peer)
    p.shm = Capability::no("not in this rank's locality list: the shared directory is not shared with it "
                           "(private /dev/shm or IPC namespace; set CGDR_SHM_DIR to a shared volume)");
  else p.shm = Capability::ok();

  if (mode == LocalityMode::kOff) p.engine = Capability::no("CGDR_LOCALITY=off");
  else if (!p.shm.yes) p.engine = Capability::no(p.shm.why);
  else if (mode == LocalityMode::kHostname && key.hostHash != mine.hostHash)
    p.engine = Capability::no("hostnames differ (CGDR_LOCALITY=hostname)");
  else p.engine = Capability::ok();

  if (!p.shm.yes || !peer) {
    p.seesPeer = p.seenByPeer = p.ipcImport = p.ipcExport = p.vmmFd = p.sameGpu = p.nvlink = p.sameNuma =
        Capability::no(p.shm.why);
    p.gpuPath = "n/a";
    return p;
  }
  bool gpus = me.hasFlag(kFlagCuda) && peer->hasFlag(kFlagCuda);
  const char* noGpu = me.hasFlag(kFlagCuda) ? "the peer has no usable GPU" : "this rank has no usable GPU";
  p.seesPeer = sees(me, *peer, "import");
  p.seenByPeer = sees(*peer, me, "export");
  p.ipcImport = !gpus ? Capability::no(noGpu) : p.seesPeer;
  p.ipcExport = !gpus ? Capability::no(noGpu) : p.seenByPeer;
  if (!gpus) p.vmmFd = Capability::no(noGpu);
  else if (!me.hasFlag(kFlagVmmFd) || !peer->hasFlag(kFlagVmmFd))
    p.vmmFd = Capability::no("a GPU cannot export cuMem memory as a file descriptor");
  else p.vmmFd = Capability::ok();
  if (gpus) {
    gpuCapabilities(me, *peer, p);
  } else {
    p.sameGpu = p.nvlink = Capability::no(noGpu);
    p.gpuPath = "n/a";
  }
  if (me.numa < 0 || peer->numa < 0) p.sameNuma = Capability::no("not bound to one NUMA node");
  else if (me.numa != peer->numa) p.sameNuma = Capability::no("NUMA nodes " + std::to_string(me.numa) + " and " + std::to_string(peer->numa));
  else p.sameNuma = Capability::ok();
  return p;
}

}  // namespace cgdr::topo
