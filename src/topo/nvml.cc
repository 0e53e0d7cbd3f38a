#include "topo/nvml.hpp"

#include <dlfcn.h>

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
    char id[32];
    std::snprintf(id, sizeof id, "%04x:%02x:%02x.0", pci.domain, pci.bus, pci.device);
    peers->push_back(id);
  }
  return true;
}

}  // namespace cgdr::topo
