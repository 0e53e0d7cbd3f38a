#include "topo/sysfs.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace cgdr::topo {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t b = 0;
  while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  return s.substr(b);
}

// The value of "Key:\t..." in a status-style file.
std::string statusField(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return trim(line.substr(key.size() + 1));
  return "";
}

}  // namespace

std::vector<int> parseCpuList(std::string_view text) {
  std::vector<int> out;
  std::string s(text);
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    if (item.empty()) continue;
    char* end = nullptr;
    long a = std::strtol(item.c_str(), &end, 10);
    long b = a;
    if (end == item.c_str() || a < 0) return {};
    if (*end == '-') {
      const char* rest = end + 1;
      b = std::strtol(rest, &end, 10);
      if (end == rest || b < a) return {};
    }
    if (*end != '\0' || b - a > 1 << 16) return {};
    for (long c = a; c <= b; ++c) out.push_back(static_cast<int>(c));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string SysReader::readLine(const std::string& p) const {
  std::ifstream in(path(p));
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  return trim(line);
}

std::optional<std::uint64_t> SysReader::nsInode(const std::string& which) const {
  char buf[128];
  ssize_t n = readlink(path("/proc/self/ns/" + which).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return std::nullopt;
  buf[n] = '\0';
  const char* open = std::strchr(buf, '[');
  if (!open) return std::nullopt;
  char* end = nullptr;
  unsigned long long v = std::strtoull(open + 1, &end, 10);
  if (end == open + 1 || *end != ']') return std::nullopt;
  return v;
}

std::vector<int> SysReader::nsPids() const {
  std::vector<int> out;
  std::stringstream ss(statusField(path("/proc/self/status"), "NSpid"));
  int v;
  while (ss >> v) out.push_back(v);
  return out;
}

std::vector<int> SysReader::cpusAllowed() const {
  return parseCpuList(statusField(path("/proc/self/status"), "Cpus_allowed_list"));
}

int SysReader::numaOfCpus(const std::vector<int>& cpus) const {
  if (cpus.empty()) return -1;
  DIR* d = opendir(path("/sys/devices/system/node").c_str());
  if (!d) return -1;
  std::set<int> nodes;
  while (dirent* e = readdir(d)) {
    int node = -1;
    if (std::sscanf(e->d_name, "node%d", &node) != 1) continue;
    auto list = parseCpuList(readLine("/sys/devices/system/node/" + std::string(e->d_name) + "/cpulist"));
    for (int c : cpus)
      if (std::binary_search(list.begin(), list.end(), c)) nodes.insert(node);
  }
  closedir(d);
  return nodes.size() == 1 ? *nodes.begin() : -1;
}

int SysReader::pciNumaNode(const std::string& busId) const {
  std::string v = readLine("/sys/bus/pci/devices/" + busId + "/numa_node");
  if (v.empty()) return -1;
  int n = std::atoi(v.c_str());
  return n < 0 ? -1 : n;
}

std::string SysReader::pciPath(const std::string& busId) const {
  char buf[PATH_MAX];
  ssize_t n = readlink(path("/sys/bus/pci/devices/" + busId).c_str(), buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  std::string link(buf);  // "../../../devices/pci0000:00/0000:00:01.0/0000:1b:00.0"
  auto at = link.find("devices/");
  return at == std::string::npos ? "" : link.substr(at + 8);
}

}  // namespace cgdr::topo
