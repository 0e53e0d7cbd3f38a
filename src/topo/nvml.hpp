// NVLink peers of a GPU through NVML, loaded with dlopen (libnvidia-ml.so.1 comes with the
// driver; where it is missing the answer is "unknown" with a reason).
#pragma once
#include <string>
#include <vector>

namespace cgdr::topo {

// PCI bus ids ("0000:1b:00.0") of the devices at the other end of each active NVLink of the GPU
// at busId. Returns false with a reason when NVML cannot answer.
bool nvlinkPeers(const std::string& busId, std::vector<std::string>* peers, std::string* why);

}  // namespace cgdr::topo
