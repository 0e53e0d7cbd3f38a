// Locality detection pieces without MPI: /proc and /sys read from fake trees, identity records
// validated field by field, and the peer-classification rules as a table (every reason covered).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

#include "topo/identity.hpp"
#include "topo/peer.hpp"
#include "topo/sysfs.hpp"

using namespace cgdr::topo;
namespace fs = std::filesystem;

namespace {

// A throw-away directory tree standing in for / (proc and sys).
class FakeRoot {
 public:
  FakeRoot() {
    char tmpl[] = "/tmp/cgdr-fakeroot-XXXXXX";
    root_ = mkdtemp(tmpl);
  }
  ~FakeRoot() { fs::remove_all(root_); }
  void file(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    std::ofstream(root_ + path) << text;
  }
  void link(const std::string& path, const std::string& target) {
    fs::create_directories(fs::path(root_ + path).parent_path());
    fs::create_symlink(target, root_ + path);
  }
  const std::string& root() const { return root_; }

 private:
  std::string root_;
};

void fillHost(FakeRoot& r) {
  r.file("/proc/sys/kernel/random/boot_id", "2fb9719e-244b-48c8-a289-9250c3e2cca2\n");
  r.link("/proc/self/ns/pid", "pid:[4026532181]");
  r.link("/proc/self/ns/net", "net:[4026532999]");
  r.file("/proc/self/status", "Name:\tx\nNSpid:\t1248\t1\nCpus_allowed_list:\t4-5,7\n");
  r.file("/sys/devices/system/node/node0/cpulist", "0-3\n");
  r.file("/sys/devices/system/node/node1/cpulist", "4-7\n");
  r.file("/sys/devices/pci0000:00/0000:00:01.0/0000:1b:00.0/numa_node", "1\n");
  r.link("/sys/bus/pci/devices/0000:1b:00.0", "../../../devices/pci0000:00/0000:00:01.0/0000:1b:00.0");
}

}  // namespace

TEST(Sysfs, CpuLists) {
  EXPECT_EQ(parseCpuList("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parseCpuList(" 5 "), (std::vector<int>{5}));
  EXPECT_EQ(parseCpuList("3,1-2,2"), (std::vector<int>{1, 2, 3}));
  EXPECT_TRUE(parseCpuList("4-2").empty());
  EXPECT_TRUE(parseCpuList("a-b").empty());
  EXPECT_TRUE(parseCpuList("-1").empty());
}

TEST(Sysfs, FakeTree) {
  FakeRoot r;
  fillHost(r);
  SysReader s(r.root());
  EXPECT_EQ(s.bootId(), "2fb9719e-244b-48c8-a289-9250c3e2cca2");
  EXPECT_EQ(s.nsInode("pid"), 4026532181u);
  EXPECT_EQ(s.nsInode("net"), 4026532999u);
  EXPECT_FALSE(s.nsInode("ipc").has_value());
  EXPECT_EQ(s.nsPids(), (std::vector<int>{1248, 1}));
  EXPECT_EQ(s.cpusAllowed(), (std::vector<int>{4, 5, 7}));
  EXPECT_EQ(s.numaOfCpus({4, 5, 7}), 1);
  EXPECT_EQ(s.numaOfCpus({3, 4}), -1);  // spans two nodes
  EXPECT_EQ(s.pciNumaNode("0000:1b:00.0"), 1);
  EXPECT_EQ(s.pciNumaNode("0000:99:00.0"), -1);
  EXPECT_EQ(s.pciPath("0000:1b:00.0"), "pci0000:00/0000:00:01.0/0000:1b:00.0");
}

TEST(Identity, CollectFromFakeTree) {
  FakeRoot r;
  fillHost(r);
  IdentityRecord rec = collectIdentity(SysReader(r.root()), "/tmp", 3, 0x1234);
  EXPECT_STREQ(rec.bootId, "2fb9719e-244b-48c8-a289-9250c3e2cca2");
  EXPECT_EQ(rec.nsPid, 4026532181u);
  EXPECT_EQ(rec.nsIpc, 0u);
  EXPECT_EQ(rec.numa, 1);
  EXPECT_EQ(rec.cpus[0], (1ull << 4) | (1ull << 5) | (1ull << 7));
  EXPECT_EQ(rec.rank, 3);
  EXPECT_EQ(rec.uid, getuid());
  sealRecord(rec);
  EXPECT_TRUE(validateRecord(rec, 3, 0x1234).isOk());
}

TEST(Identity, ValidationRejectsEveryCorruption) {
  IdentityRecord good = collectIdentity(SysReader(), "/tmp", 2, 77);
  sealRecord(good);
  ASSERT_TRUE(validateRecord(good, 2, 77).isOk());
  const std::pair<const char*, std::function<void(IdentityRecord&)>> cases[] = {
      {"not a cgdr record", [](IdentityRecord& r) { r.magic = 1; }},
      {"not a cgdr record", [](IdentityRecord& r) { r.version = 9; }},
      {"another job", [](IdentityRecord& r) { r.nonce = 78; }},
      {"does not match its slot", [](IdentityRecord& r) { r.rank = 5; }},
      {"unterminated", [](IdentityRecord& r) { std::memset(r.bootId, 'a', sizeof r.bootId); }},
      {"count out of range", [](IdentityRecord& r) { r.gpuCount = kMaxGpus + 1; }},
      {"current GPU out of range", [](IdentityRecord& r) { r.currentGpu = 3; }},
      {"malformed GPU entry", [](IdentityRecord& r) { r.gpuCount = 1; r.gpus[0].linkCount = kMaxLinks + 1; }},
  };
  for (const auto& [why, corrupt] : cases) {
    IdentityRecord r = good;
    corrupt(r);
    if (r.rank == good.rank && r.nonce == good.nonce) sealRecord(r);  // a well-formed lie, not noise
    auto st = validateRecord(r, 2, 77);
    EXPECT_FALSE(st.isOk()) << why;
    EXPECT_NE(st.message().find(why), std::string::npos) << st.message();
  }
  IdentityRecord flipped = good;
  flipped.pid ^= 1;  // not resealed: the checksum catches it
  EXPECT_NE(validateRecord(flipped, 2, 77).message().find("checksum"), std::string::npos);
}

namespace {

IdentityRecord base(int rank) {
  IdentityRecord r;
  std::memset(static_cast<void*>(&r), 0, sizeof r);
  r.rank = rank;
  r.uid = 1000;
  std::strcpy(r.bootId, "boot-a");
  std::strcpy(r.hostname, "node1");
  r.nsPid = 100;
  r.nsMnt = 200;
  r.pidNsChain[0] = 100;
  r.pidNsDepth = 1;
  r.flags = kFlagPidNsChain;
  r.numa = 0;
  r.currentGpu = -1;
  return r;
}

void addGpu(IdentityRecord& r, int id, const char* bus, const char* path, int numa) {
  GpuRecord& g = r.gpus[r.gpuCount];
  std::memset(&g, 0, sizeof g);
  g.uuid[0] = static_cast<std::uint8_t>(id);
  std::strcpy(g.busId, bus);
  std::strcpy(g.pciPath, path);
  g.numa = numa;
  r.currentGpu = static_cast<int>(r.gpuCount++);
  r.flags |= kFlagCuda | kFlagVmmFd | kFlagNvmlLinks;
}

struct Case {
  const char* name;
  LocalityMode mode;
  std::function<void(IdentityRecord& me, IdentityRecord& peer, bool& listed)> setup;
  Relation relation;
  bool engine, shm, sees, seen;
  const char* reason;  // expected in engine's or shm's reason (or "" when both yes)
};

}  // namespace

TEST(Classify, RelationsAndSharedMemory) {
  const Case cases[] = {
      {"same namespace", LocalityMode::kContainer, [](auto&, auto&, bool&) {}, Relation::kSameNamespace, true, true, true, true, ""},
      {"co-located container", LocalityMode::kContainer,
       [](auto&, auto& p, bool&) { p.nsPid = 101; p.pidNsChain[0] = 101; p.nsMnt = 201; },
       Relation::kCoLocatedContainer, true, true, false, false, ""},
      {"remote", LocalityMode::kContainer, [](auto&, auto& p, bool& l) { std::strcpy(p.bootId, "boot-b"); l = false; },
       Relation::kRemote, false, false, false, false, "another host"},
      {"shared dir on another host", LocalityMode::kContainer, [](auto&, auto& p, bool&) { std::strcpy(p.bootId, "boot-b"); },
       Relation::kRemote, false, false, false, false, "shared with another host"},
      {"private /dev/shm", LocalityMode::kContainer, [](auto&, auto& p, bool& l) { p.nsMnt = 9; l = false; },
       Relation::kCoLocatedContainer, false, false, false, false, "not in this rank's locality list"},
      {"different uid", LocalityMode::kContainer, [](auto&, auto& p, bool&) { p.uid = 0; },
       Relation::kSameNamespace, false, false, false, false, "different uid"},
      {"off mode", LocalityMode::kOff, [](auto&, auto&, bool&) {}, Relation::kSameNamespace, false, true, true, true,
       "CGDR_LOCALITY=off"},
      {"hostname mode, other hostname", LocalityMode::kHostname,
       [](auto&, auto& p, bool&) { std::strcpy(p.hostname, "pod2"); }, Relation::kSameNamespace, false, true, true, true,
       "hostnames differ"},
      {"hostname mode, same hostname", LocalityMode::kHostname, [](auto&, auto&, bool&) {}, Relation::kSameNamespace,
       true, true, true, true, ""},
      {"exporter in a child PID namespace", LocalityMode::kContainer,
       [](auto&, auto& p, bool&) { p.nsPid = 300; p.pidNsChain[0] = 300; p.pidNsChain[1] = 100; p.pidNsDepth = 2; },
       Relation::kCoLocatedContainer, true, true, true, false, ""},
      {"importer in a child PID namespace", LocalityMode::kContainer,
       [](auto& m, auto& p, bool&) { m.nsPid = 300; m.pidNsChain[0] = 300; m.pidNsChain[1] = 100; m.pidNsDepth = 2; p.nsPid = 100; },
       Relation::kCoLocatedContainer, true, true, false, true, ""},
  };
  for (const Case& c : cases) {
    IdentityRecord me = base(0), peer = base(1);
    bool listed = true;
    c.setup(me, peer, listed);
    PeerInfo p = classifyPeer(c.mode, me, hostKeyOf(peer), listed ? &peer : nullptr);
    EXPECT_EQ(p.relation, c.relation) << c.name;
    EXPECT_EQ(p.engine.yes, c.engine) << c.name << ": " << p.engine.why;
    EXPECT_EQ(p.shm.yes, c.shm) << c.name << ": " << p.shm.why;
    EXPECT_EQ(p.seesPeer.yes, c.sees) << c.name << ": " << p.seesPeer.why;
    EXPECT_EQ(p.seenByPeer.yes, c.seen) << c.name << ": " << p.seenByPeer.why;
    std::string reasons = p.engine.why + "|" + p.shm.why;
    if (*c.reason) {
      EXPECT_NE(reasons.find(c.reason), std::string::npos) << c.name << ": " << reasons;
    }
    if (p.engine.yes) {
      EXPECT_TRUE(p.engine.why.empty());
    }
  }
}

TEST(Classify, SelfIsServedByTheEngine) {
  IdentityRecord me = base(4);
  PeerInfo p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(me), &me);
  EXPECT_EQ(p.relation, Relation::kSelf);
  EXPECT_TRUE(p.engine.yes);
}

TEST(Classify, PidNamespaceAncestryUnknown) {
  IdentityRecord me = base(0), peer = base(1);
  peer.nsPid = 300;
  peer.pidNsChain[0] = 300;
  peer.flags &= ~kFlagPidNsChain;  // NS_GET_PARENT was refused
  PeerInfo p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_FALSE(p.seesPeer.yes);
  EXPECT_NE(p.seesPeer.why.find("ancestry unknown"), std::string::npos);
  peer.flags |= kFlagPidNsChain;
  p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_NE(p.seesPeer.why.find("separate PID namespaces"), std::string::npos);
}

TEST(Classify, GpuCapabilities) {
  IdentityRecord me = base(0), peer = base(1);
  // No GPU on one side.
  addGpu(me, 1, "0000:1b:00.0", "pci0000:00/0000:00:01.0/0000:1b:00.0", 0);
  PeerInfo p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_FALSE(p.ipcImport.yes);
  EXPECT_NE(p.ipcImport.why.find("peer has no usable GPU"), std::string::npos);
  EXPECT_NE(p.vmmFd.why.find("peer has no usable GPU"), std::string::npos);
  // Same GPU.
  addGpu(peer, 1, "0000:1b:00.0", "pci0000:00/0000:00:01.0/0000:1b:00.0", 0);
  p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_TRUE(p.sameGpu.yes);
  EXPECT_EQ(p.gpuPath, "same GPU");
  EXPECT_TRUE(p.ipcImport.yes);
  EXPECT_TRUE(p.vmmFd.yes);
  // Two GPUs joined by NVLink.
  peer.gpuCount = 0;
  addGpu(peer, 2, "0000:2c:00.0", "pci0000:00/0000:00:02.0/0000:2c:00.0", 0);
  std::strcpy(me.gpus[0].linkPeers[0], "0000:2c:00.0");
  me.gpus[0].linkCount = 1;
  p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_FALSE(p.sameGpu.yes);
  EXPECT_TRUE(p.nvlink.yes);
  EXPECT_EQ(p.gpuPath, "NVLink");
  // No NVLink, NVML known: the PCIe relation.
  me.gpus[0].linkCount = 0;
  p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_NE(p.nvlink.why.find("no NVLink"), std::string::npos);
  EXPECT_EQ(p.gpuPath, "PHB");
  // NVML unavailable on one side.
  peer.flags &= ~kFlagNvmlLinks;
  p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_NE(p.nvlink.why.find("NVML unavailable"), std::string::npos);
  // cuMem export unsupported; separate PID namespaces block legacy IPC only.
  peer.flags &= ~kFlagVmmFd;
  peer.nsPid = 500;
  peer.pidNsChain[0] = 500;
  p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_NE(p.vmmFd.why.find("cannot export"), std::string::npos);
  EXPECT_FALSE(p.ipcImport.yes);
  EXPECT_NE(p.ipcImport.why.find("separate PID namespaces"), std::string::npos);
  // No current GPU.
  me.currentGpu = -1;
  p = classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer);
  EXPECT_NE(p.sameGpu.why.find("this rank has no current GPU"), std::string::npos);
}

TEST(Classify, Numa) {
  IdentityRecord me = base(0), peer = base(1);
  EXPECT_TRUE(classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer).sameNuma.yes);
  peer.numa = 1;
  EXPECT_NE(classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer).sameNuma.why.find("NUMA nodes 0 and 1"),
            std::string::npos);
  peer.numa = -1;
  EXPECT_NE(classifyPeer(LocalityMode::kContainer, me, hostKeyOf(peer), &peer).sameNuma.why.find("not bound"),
            std::string::npos);
}

TEST(Classify, PciRelation) {
  EXPECT_EQ(pciRelation("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0",
                        "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:04:00.0", 0, 0), "PIX");
  EXPECT_EQ(pciRelation("pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:00.0/0000:03:00.0",
                        "pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:05:00.0", 0, 0), "PXB");
  EXPECT_EQ(pciRelation("pci0000:00/0000:00:01.0/0000:1b:00.0", "pci0000:00/0000:00:02.0/0000:2c:00.0", 0, 0), "PHB");
  EXPECT_EQ(pciRelation("pci0000:00/0000:00:01.0/0000:1b:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0", 0, 1), "SYS");
  EXPECT_EQ(pciRelation("pci0000:00/0000:00:01.0/0000:1b:00.0", "pci0000:80/0000:80:01.0/0000:81:00.0", 0, 0), "PHB");
  EXPECT_EQ(pciRelation("", "pci0000:00/0000:00:01.0", 0, 0), "unknown");
}
