#include "topo/identity.hpp"

#include <fcntl.h>
#include <linux/nsfs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

#include "base/cuda.hpp"
#include "topo/nvml.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::topo {
namespace {

void copyString(char* dst, std::size_t cap, const std::string& s) {
  std::snprintf(dst, cap, "%s", s.c_str());
}

bool terminated(const char* s, std::size_t cap) { return std::memchr(s, '\0', cap) != nullptr; }

std::uint64_t fnv1a(const void* data, std::size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// This process's PID namespace and its ancestors (NS_GET_PARENT), as far as permitted.
void pidNamespaceChain(IdentityRecord& r) {
  int fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
  r.pidNsDepth = 0;
  bool complete = false;
  while (fd >= 0 && r.pidNsDepth < kMaxNsLevels) {
    struct stat st {};
    if (fstat(fd, &st) != 0) break;
    r.pidNsChain[r.pidNsDepth++] = st.st_ino;
    int parent = ioctl(fd, NS_GET_PARENT);
    close(fd);
    fd = parent;
    if (parent < 0) complete = errno == EPERM;  // EPERM: no parent visible (the top)
  }
  if (fd >= 0) close(fd);
  if (complete) r.flags |= kFlagPidNsChain;
}

#if CGDR_HAVE_CUDA
void collectGpus(const SysReader& sys, IdentityRecord& r) {
  if (!base::cuda::usable()) return;
  r.flags |= kFlagCuda;
  int n = base::cuda::deviceCount();
  int current = -1;
  cudaGetDevice(&current);
  bool nvmlOk = true;
  for (int d = 0; d < n && static_cast<int>(r.gpuCount) < kMaxGpus; ++d) {
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, d) != cudaSuccess) continue;
    GpuRecord& g = r.gpus[r.gpuCount];
    std::memcpy(g.uuid, p.uuid.bytes, 16);
    std::snprintf(g.busId, sizeof g.busId, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
    copyString(g.pciPath, sizeof g.pciPath, sys.pciPath(g.busId));
    g.numa = sys.pciNumaNode(g.busId);
    std::vector<std::string> peers;
    std::string why;
    if (nvlinkPeers(g.busId, &peers, &why)) {
      for (const auto& peer : peers) {
        if (g.linkCount >= kMaxLinks) break;
        copyString(g.linkPeers[g.linkCount++], sizeof g.linkPeers[0], peer);
      }
    } else {
      nvmlOk = false;
    }
    if (d == current && base::cuda::vmmFdSupported(d)) r.flags |= kFlagVmmFd;
    if (d == current) r.currentGpu = static_cast<std::int32_t>(r.gpuCount);
    ++r.gpuCount;
  }
  (void)cudaGetLastError();
  if (nvmlOk && r.gpuCount > 0) r.flags |= kFlagNvmlLinks;
}
#else
void collectGpus(const SysReader&, IdentityRecord&) {}
#endif

}  // namespace

IdentityRecord collectIdentity(const SysReader& sys, const std::string& shmDir, int rank, std::uint64_t nonce) {
  IdentityRecord r;
  std::memset(static_cast<void*>(&r), 0, sizeof r);
  r.magic = kRecordMagic;
  r.version = kRecordVersion;
  r.size = static_cast<std::uint16_t>(sizeof(IdentityRecord));
  r.nonce = nonce;
  r.rank = rank;
  r.uid = static_cast<std::uint32_t>(getuid());
  r.pid = static_cast<std::int32_t>(getpid());
  r.currentGpu = -1;
  copyString(r.bootId, sizeof r.bootId, sys.bootId());
  char host[65] = {};
  gethostname(host, sizeof host - 1);
  copyString(r.hostname, sizeof r.hostname, host);
  struct stat st {};
  if (stat(shmDir.c_str(), &st) == 0) {
    r.shmDev = st.st_dev;
    r.shmIno = st.st_ino;
  }
  r.nsPid = sys.nsInode("pid").value_or(0);
  r.nsIpc = sys.nsInode("ipc").value_or(0);
  r.nsUts = sys.nsInode("uts").value_or(0);
  r.nsNet = sys.nsInode("net").value_or(0);
  r.nsMnt = sys.nsInode("mnt").value_or(0);
  r.nsUser = sys.nsInode("user").value_or(0);
  pidNamespaceChain(r);
  auto cpus = sys.cpusAllowed();
  for (int c : cpus)
    if (c < kCpuWords * 64) r.cpus[c / 64] |= 1ull << (c % 64);
  r.numa = sys.numaOfCpus(cpus);
  collectGpus(sys, r);
  return r;
}

void sealRecord(IdentityRecord& r) { r.checksum = fnv1a(&r, offsetof(IdentityRecord, checksum)); }

base::Status validateRecord(const IdentityRecord& r, int slot, std::uint64_t nonce) {
  auto bad = [&](const char* what) {
    return base::Status(base::Errc::kProtocol, std::string("locality slot ") + std::to_string(slot) + ": " + what);
  };
  if (r.magic != kRecordMagic || r.version != kRecordVersion || r.size != sizeof(IdentityRecord))
    return bad("not a cgdr record of this version");
  if (r.nonce != nonce) return bad("belongs to another job");
  if (r.rank != slot) return bad("rank does not match its slot");
  if (r.checksum != fnv1a(&r, offsetof(IdentityRecord, checksum))) return bad("checksum mismatch");
  if (!terminated(r.bootId, sizeof r.bootId) || !terminated(r.hostname, sizeof r.hostname)) return bad("unterminated string");
  if (r.gpuCount > kMaxGpus || r.pidNsDepth > kMaxNsLevels) return bad("count out of range");
  if (r.currentGpu < -1 || r.currentGpu >= static_cast<std::int32_t>(r.gpuCount)) return bad("current GPU out of range");
  for (std::uint32_t g = 0; g < r.gpuCount; ++g) {
    const GpuRecord& gpu = r.gpus[g];
    if (gpu.linkCount > kMaxLinks || !terminated(gpu.busId, sizeof gpu.busId) ||
        !terminated(gpu.pciPath, sizeof gpu.pciPath))
      return bad("malformed GPU entry");
    for (std::uint32_t l = 0; l < gpu.linkCount; ++l)
      if (!terminated(gpu.linkPeers[l], sizeof gpu.linkPeers[l])) return bad("malformed NVLink entry");
  }
  return base::Status::ok();
}

std::string uuidString(const std::uint8_t u[16]) {
  char s[48];
  std::snprintf(s, sizeof s, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
                u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return s;
}

}  // namespace cgdr::topo
