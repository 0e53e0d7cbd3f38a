#include "topo/report.hpp"

#include <cstdio>
#include <sstream>

namespace cgdr::topo {
namespace {

std::string cap(const char* name, const Capability& c) {
  return std::string(name) + " " + (c.yes ? "yes" : "no (" + c.why + ")");
}

std::string cpuList(const IdentityRecord& r) {
  std::string out;
  int start = -1;
  for (int c = 0; c <= kCpuWords * 64; ++c) {
    bool on = c < kCpuWords * 64 && (r.cpus[c / 64] >> (c % 64) & 1);
    if (on && start < 0) start = c;
    if (!on && start >= 0) {
      out += (out.empty() ? "" : ",") + std::to_string(start) + (c - 1 > start ? "-" + std::to_string(c - 1) : "");
      start = -1;
    }
  }
  return out.empty() ? "?" : out;
}

}  // namespace

std::string describeIdentity(const IdentityRecord& r) {
  std::ostringstream o;
  std::string p = "rank " + std::to_string(r.rank) + ": ";
  o << p << "host " << r.hostname << ", boot_id " << r.bootId << ", pid " << r.pid << ", uid " << r.uid << "\n";
  o << p << "namespaces pid " << r.nsPid << " (ancestors " << (r.pidNsDepth ? r.pidNsDepth - 1 : 0)
    << (r.hasFlag(kFlagPidNsChain) ? "" : ", incomplete") << ") ipc " << r.nsIpc << " uts " << r.nsUts << " net "
    << r.nsNet << " mnt " << r.nsMnt << " user " << r.nsUser << "\n";
  o << p << "cpus " << cpuList(r) << ", NUMA node " << (r.numa >= 0 ? std::to_string(r.numa) : "several/unknown")
    << ", shared dir dev:ino " << r.shmDev << ":" << r.shmIno << "\n";
  for (std::uint32_t g = 0; g < r.gpuCount; ++g) {
    const GpuRecord& gpu = r.gpus[g];
    o << p << "GPU " << g << (static_cast<int>(g) == r.currentGpu ? " (current)" : "") << ": " << uuidString(gpu.uuid)
      << " bus " << gpu.busId << " NUMA " << gpu.numa << " NVLink peers";
    if (gpu.linkCount == 0) o << (r.hasFlag(kFlagNvmlLinks) ? " none" : " unknown");
    for (std::uint32_t l = 0; l < gpu.linkCount; ++l) o << (l ? "," : " ") << gpu.linkPeers[l];
    o << "\n";
  }
  if (r.gpuCount == 0) o << p << "no usable GPU\n";
  o << p << "cuMem file-descriptor export " << (r.hasFlag(kFlagVmmFd) ? "supported" : "not supported") << "\n";
  return o.str();
}

std::string describePeers(const LocalityTable& t) {
  std::ostringstream o;
  for (const PeerInfo& p : t.peers) {
    if (p.relation == Relation::kSelf) continue;
    o << "rank " << t.rank << " -> " << p.rank << ": " << relationName(p.relation) << "; " << cap("engine", p.engine) << "; "
      << cap("shared memory", p.shm) << "; " << cap("peer's PID visible", p.seesPeer) << "; "
      << cap("legacy CUDA IPC import", p.ipcImport) << "; "
      << cap("legacy CUDA IPC export", p.ipcExport) << "; " << cap("cuMem fd", p.vmmFd) << "; "
      << cap("same GPU", p.sameGpu) << "; " << cap("NVLink", p.nvlink) << "; GPU path " << p.gpuPath << "; "
      << cap("same NUMA", p.sameNuma) << "\n";
    o << "pair " << t.rank << " " << p.rank << " relation=" << static_cast<int>(p.relation) << " engine=" << p.engine.yes
      << " shm=" << p.shm.yes << " seesPeer=" << p.seesPeer.yes << " seenByPeer=" << p.seenByPeer.yes << " ipcImport=" << p.ipcImport.yes << " ipcExport=" << p.ipcExport.yes
      << " vmm=" << p.vmmFd.yes << " sameGpu=" << p.sameGpu.yes << " nvlink=" << p.nvlink.yes << " path=" << p.gpuPath
      << "\n";
  }
  return o.str();
}

std::string relationRow(const LocalityTable& t) {
  std::string row;
  for (const PeerInfo& p : t.peers) {
    char c = p.relation == Relation::kSelf ? 's' : p.relation == Relation::kSameNamespace ? 'n'
             : p.relation == Relation::kCoLocatedContainer                         ? 'c'
                                                                                    : 'r';
    if (p.engine.yes) c = static_cast<char>(c - 'a' + 'A');
    row += "  ";
    row += c;
  }
  return row;
}

}  // namespace cgdr::topo
