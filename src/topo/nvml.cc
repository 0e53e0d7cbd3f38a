#include "topo/nvml.hpp"

#include "base/log.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <mutex>

namespace cgdr::topo {
namespace {

// NVML's public ABI (nvml.h): only what is used here.
using NvmlReturn = int;
using NvmlDevice = void*;
constexpr unsigned kMaxLinks = 18;  // NVML_NVLINK_MAX_LINKS (Hopper)
struct NvmlPciInfo {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};

struct Nvml {
  NvmlReturn (*init)() = nullptr;
  NvmlReturn (*byBus)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*linkState)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remotePci)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  // Optional: GPU pairs NVML itself reports as joined by NVLink (also through NVSwitches, whose
  // PCI ids a link's remote end shows instead of the peer GPU's).
  NvmlReturn (*count)(unsigned*) = nullptr;
  NvmlReturn (*byIndex)(unsigned, NvmlDevice*) = nullptr;
  NvmlReturn (*pciInfo)(NvmlDevice, NvmlPciInfo*) = nullptr;
  NvmlReturn (*p2p)(NvmlDevice, NvmlDevice, int, int*) = nullptr;
  std::string why;
  bool ok = false;
};

const Nvml& nvml() {
  static Nvml n = [] {
    Nvml v;
    void* h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      v.why = "NVML (libnvidia-ml.so.1) not found";
      return v;
    }
    v.init = reinterpret_cast<NvmlReturn (*)()>(dlsym(h, "nvmlInit_v2"));
    v.byBus = reinterpret_cast<NvmlReturn (*)(const char*, NvmlDevice*)>(dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2"));
    v.linkState = reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned, int*)>(dlsym(h, "nvmlDeviceGetNvLinkState"));
    v.remotePci =
        reinterpret_cast<NvmlReturn (*)(NvmlDevice, unsigned, NvmlPciInfo*)>(dlsym(h, "nvmlDeviceGetNvLinkRemotePciInfo_v2"));
    v.count = reinterpret_cast<NvmlReturn (*)(unsigned*)>(dlsym(h, "nvmlDeviceGetCount_v2"));
    v.byIndex = reinterpret_cast<NvmlReturn (*)(unsigned, NvmlDevice*)>(dlsym(h, "nvmlDeviceGetHandleByIndex_v2"));
    v.pciInfo = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlPciInfo*)>(dlsym(h, "nvmlDeviceGetPciInfo_v3"));
    v.p2p = reinterpret_cast<NvmlReturn (*)(NvmlDevice, NvmlDevice, int, int*)>(dlsym(h, "nvmlDeviceGetP2PStatus"));
    if (!v.init || !v.byBus || !v.linkState || !v.remotePci) {
      v.why = "NVML lacks the NVLink queries";
      return v;
    }
    if (v.init() != 0) {
      v.why = "nvmlInit failed";
      return v;
    }
    v.ok = true;
    return v;
  }();
  return n;
}

std::string busName(const NvmlPciInfo& pci) {
  char id[32];
  std::snprintf(id, sizeof id, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
  return id;
}

}  // namespace

bool nvlinkPeers(const std::string& busId, std::vector<std::string>* peers, std::string* why) {
  const Nvml& n = nvml();
  if (!n.ok) {
    *why = n.why;
    return false;
  }
  NvmlDevice dev = nullptr;
  if (n.byBus(busId.c_str(), &dev) != 0) {
    *why = "NVML does not see GPU " + busId;
    return false;
  }
  peers->clear();
  for (unsigned l = 0; l < kMaxLinks; ++l) {
    int active = 0;
    if (n.linkState(dev, l, &active) != 0 || !active) continue;
    NvmlPciInfo pci{};
    if (n.remotePci(dev, l, &pci) != 0) continue;
    CGDR_LOG(kDebug, kTopo, "GPU %s NVLink %u active, remote end %s", busId.c_str(), l, busName(pci).c_str());
    // Links to NVSwitches (or, in a VM, to ends the guest cannot see: all ones) name no GPU.
    std::string id = busName(pci);
    if (pci.domain == 0xffffffffu || std::find(peers->begin(), peers->end(), id) != peers->end()) continue;
    peers->push_back(id);
  }
  // GPUs behind NVSwitches: the links' remote ends are the switches, so ask NVML about every GPU
  // it sees (in a container only the GPUs mapped into it).
  unsigned count = 0;
  if (n.count && n.byIndex && n.pciInfo && n.p2p && n.count(&count) == 0) {
    for (unsigned i = 0; i < count; ++i) {
      NvmlDevice other = nullptr;
      NvmlPciInfo pci{};
      if (n.byIndex(i, &other) != 0 || other == dev || n.pciInfo(other, &pci) != 0) continue;
      int status = -1;
      constexpr int kCapsNvlink = 2, kStatusOk = 0;  // NVML_P2P_CAPS_INDEX_NVLINK, NVML_P2P_STATUS_OK
      int rc = n.p2p(dev, other, kCapsNvlink, &status);
      CGDR_LOG(kDebug, kTopo, "GPU %s to GPU %s: NVML NVLink P2P query %d, status %d", busId.c_str(),
               busName(pci).c_str(), rc, status);
      if (rc != 0 || status != kStatusOk) continue;
      std::string id = busName(pci);
      if (std::find(peers->begin(), peers->end(), id) == peers->end()) peers->push_back(id);
    }
  }
  return true;
}

}  // namespace cgdr::topo
