// Reads what locality detection needs from /proc and /sys under a root directory, so tests can
// point it at fake trees.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cgdr::topo {

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}; empty on a malformed list.
std::vector<int> parseCpuList(std::string_view text);

class SysReader {
 public:
  explicit SysReader(std::string root = "") : root_(std::move(root)) {}

  // First line of a file, trimmed; "" if it cannot be read.
  std::string readLine(const std::string& path) const;
  // /proc/sys/kernel/random/boot_id: the same in every container of a host.
  std::string bootId() const { return readLine("/proc/sys/kernel/random/boot_id"); }
  // Inode of /proc/self/ns/<which> (link text "pid:[4026531836]").
  std::optional<std::uint64_t> nsInode(const std::string& which) const;
  // NSpid of /proc/self/status: this process's pid in each nested PID namespace, outermost first.
  std::vector<int> nsPids() const;
  // Cpus_allowed_list of /proc/self/status.
  std::vector<int> cpusAllowed() const;
  // The NUMA node holding all of `cpus`, -1 if they span nodes or nothing is known.
  int numaOfCpus(const std::vector<int>& cpus) const;
  // NUMA node of a PCI device ("0000:1b:00.0"), -1 if unknown.
  int pciNumaNode(const std::string& busId) const;
  // The device's path below /sys/devices ("pci0000:00/0000:00:01.0/0000:1b:00.0"), "" if unknown.
  std::string pciPath(const std::string& busId) const;

 private:
  std::string path(const std::string& p) const { return root_ + p; }
  std::string root_;
};

}  // namespace cgdr::topo
