// cgdr-pods-net: the network plumbing of cgdr-pods, spoken to the kernel over rtnetlink, so the
// pods need no iproute2 (some hosts, such as the GPU machine, do not have `ip`).
//   cgdr-pods-net bridge NAME ADDR/PREFIX          create a bridge with an address, up
//   cgdr-pods-net veth HOST BRIDGE PID ADDR/PREFIX  a veth pair: HOST on the bridge (up), its peer
//                                                  created as eth0 in PID's network namespace
//                                                  with the address; eth0 and lo up there
//   cgdr-pods-net del NAME                         delete a link (a bridge, a veth)
//   cgdr-pods-net bridges PREFIX                   print the bridges whose name starts with PREFIX
// Exit status 0 on success, 1 with a message naming the step and the kernel's reason otherwise.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include <net/if.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what, int err) {
  std::fprintf(stderr, "cgdr-pods-net: %s: %s\n", what.c_str(), std::strerror(err));
  std::exit(1);
}

// One request: a netlink header, a fixed part and attributes, built in place.
class Request {
 public:
  Request(std::uint16_t type, std::uint16_t flags) {
    h()->nlmsg_len = NLMSG_LENGTH(0);
    h()->nlmsg_type = type;
    h()->nlmsg_flags = static_cast<std::uint16_t>(NLM_F_REQUEST | flags);
  }
  nlmsghdr* h() { return reinterpret_cast<nlmsghdr*>(buf_); }
  // Appends raw bytes (a fixed header such as ifinfomsg), aligned.
  void* append(const void* data, std::size_t n) {
    std::size_t at = NLMSG_ALIGN(h()->nlmsg_len);
    if (at + NLMSG_ALIGN(n) > sizeof buf_) die("request too large", EMSGSIZE);
    std::memset(buf_ + at, 0, NLMSG_ALIGN(n));
    if (data) std::memcpy(buf_ + at, data, n);
    h()->nlmsg_len = static_cast<std::uint32_t>(at + NLMSG_ALIGN(n));
    return buf_ + at;
  }
  rtattr* attr(std::uint16_t type, const void* data, std::size_t n) {
    std::size_t at = NLMSG_ALIGN(h()->nlmsg_len);
    if (at + RTA_SPACE(n) > sizeof buf_) die("request too large", EMSGSIZE);
    auto* a = reinterpret_cast<rtattr*>(buf_ + at);
    a->rta_type = type;
    a->rta_len = static_cast<std::uint16_t>(RTA_LENGTH(n));
    if (n) std::memcpy(RTA_DATA(a), data, n);
    h()->nlmsg_len = static_cast<std::uint32_t>(at + RTA_SPACE(n));
    return a;
  }
  rtattr* str(std::uint16_t type, const std::string& s) { return attr(type, s.c_str(), s.size() + 1); }
  rtattr* u32(std::uint16_t type, std::uint32_t v) { return attr(type, &v, sizeof v); }
  rtattr* begin(std::uint16_t type) { return attr(type, nullptr, 0); }
  void end(rtattr* nest) {
    nest->rta_len = static_cast<std::uint16_t>(buf_ + h()->nlmsg_len - reinterpret_cast<char*>(nest));
  }

 private:
  alignas(NLMSG_ALIGNTO) char buf_[4096] = {};
};

class Netlink {
 public:
  Netlink() {
    fd_ = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd_ < 0) die("netlink socket", errno);
  }
  ~Netlink() { close(fd_); }

  // Sends a request that asks for an acknowledgement; returns 0 or the kernel's errno.
  int call(Request& r) {
    return exchange(r, NLM_F_ACK, [&](nlmsghdr* m) {
      if (m->nlmsg_seq != seq_ || m->nlmsg_type != NLMSG_ERROR) return -1;
      return -static_cast<nlmsgerr*>(NLMSG_DATA(m))->error;
    });
  }

  // A dump request: calls f on every message until the kernel says it is done.
  template <class F>
  int dump(Request& r, F&& f) {
    return exchange(r, NLM_F_DUMP, [&](nlmsghdr* m) {
      if (m->nlmsg_type == NLMSG_DONE) return 0;
      if (m->nlmsg_type == NLMSG_ERROR) return -static_cast<nlmsgerr*>(NLMSG_DATA(m))->error;
      f(m);
      return -1;
    });
  }

 private:
  // Sends r and reads the kernel's answers: `answer` returns -1 to read on, else the result.
  template <class F>
  int exchange(Request& r, std::uint16_t flags, F&& answer) {
    r.h()->nlmsg_flags |= flags;
    r.h()->nlmsg_seq = ++seq_;
    if (send(fd_, r.h(), r.h()->nlmsg_len, 0) < 0) return errno;
    for (;;) {
      ssize_t n = recv(fd_, buf_, sizeof buf_, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno;
      }
      int len = static_cast<int>(n);
      for (auto* m = reinterpret_cast<nlmsghdr*>(buf_); NLMSG_OK(m, len); m = NLMSG_NEXT(m, len))
        if (int rc = answer(m); rc >= 0) return rc;
    }
  }

  int fd_ = -1;
  std::uint32_t seq_ = 0;
  alignas(NLMSG_ALIGNTO) char buf_[32768];
};

int indexOf(const std::string& name) {
  unsigned i = if_nametoindex(name.c_str());
  if (i == 0) die("no interface " + name, errno ? errno : ENODEV);
  return static_cast<int>(i);
}

// "10.1.2.3/24" -> address (network order) and prefix.
void parseCidr(const std::string& s, in_addr* a, unsigned* prefix) {
  auto slash = s.find('/');
  char* end = nullptr;
  long p = slash == std::string::npos ? -1 : std::strtol(s.c_str() + slash + 1, &end, 10);
  if (p < 0 || p > 32 || *end || inet_pton(AF_INET, s.substr(0, slash).c_str(), a) != 1)
    die("not an IPv4 address with a prefix length: '" + s + "'", EINVAL);
  *prefix = static_cast<unsigned>(p);
}

void setUp(Netlink& nl, int index, int master) {
  Request r(RTM_NEWLINK, 0);
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = index;
  ifi.ifi_flags = IFF_UP;
  ifi.ifi_change = IFF_UP;
  r.append(&ifi, sizeof ifi);
  if (master > 0) r.u32(IFLA_MASTER, static_cast<std::uint32_t>(master));
  if (int e = nl.call(r)) die("bring up interface " + std::to_string(index), e);
}

void addAddress(Netlink& nl, int index, const std::string& cidr) {
  in_addr a{};
  unsigned prefix = 0;
  parseCidr(cidr, &a, &prefix);
  Request r(RTM_NEWADDR, NLM_F_CREATE | NLM_F_EXCL);
  ifaddrmsg ifa{};
  ifa.ifa_family = AF_INET;
  ifa.ifa_prefixlen = static_cast<unsigned char>(prefix);
  ifa.ifa_index = static_cast<unsigned>(index);
  r.append(&ifa, sizeof ifa);
  r.attr(IFA_LOCAL, &a, sizeof a);
  r.attr(IFA_ADDRESS, &a, sizeof a);
  if (int e = nl.call(r)) die("add address " + cidr, e);
}

void createLink(Netlink& nl, const std::string& name, const char* kind, const std::string& peer, int peerPid) {
  Request r(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  r.append(&ifi, sizeof ifi);
  r.str(IFLA_IFNAME, name);
  rtattr* info = r.begin(IFLA_LINKINFO);
  r.str(IFLA_INFO_KIND, kind);
  if (!peer.empty()) {
    rtattr* data = r.begin(IFLA_INFO_DATA);
    rtattr* p = r.begin(VETH_INFO_PEER);
    ifinfomsg pi{};
    pi.ifi_family = AF_UNSPEC;
    r.append(&pi, sizeof pi);
    r.str(IFLA_IFNAME, peer);
    r.u32(IFLA_NET_NS_PID, static_cast<std::uint32_t>(peerPid));
    r.end(p);
    r.end(data);
  }
  r.end(info);
  if (int e = nl.call(r)) die(std::string("create ") + kind + " " + name, e);
}

int cmdBridge(const std::string& name, const std::string& cidr) {
  in_addr a{};
  unsigned prefix = 0;
  parseCidr(cidr, &a, &prefix);  // before creating anything
  Netlink nl;
  createLink(nl, name, "bridge", "", 0);
  int i = indexOf(name);
  addAddress(nl, i, cidr);
  setUp(nl, i, 0);
  return 0;
}

int cmdVeth(const std::string& host, const std::string& bridge, int pid, const std::string& cidr) {
  in_addr a{};
  unsigned prefix = 0;
  parseCidr(cidr, &a, &prefix);  // before creating anything
  {
    Netlink nl;
    createLink(nl, host, "veth", "eth0", pid);
    setUp(nl, indexOf(host), indexOf(bridge));
  }
  std::string path = "/proc/" + std::to_string(pid) + "/ns/net";
  int ns = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (ns < 0) die("open " + path, errno);
  if (setns(ns, CLONE_NEWNET) != 0) die("enter the network namespace of pid " + std::to_string(pid), errno);
  close(ns);
  Netlink nl;  // opened inside the pod's namespace
  int eth = indexOf("eth0");
  addAddress(nl, eth, cidr);
  setUp(nl, eth, 0);
  setUp(nl, indexOf("lo"), 0);
  return 0;
}

int cmdDel(const std::string& name) {
  unsigned i = if_nametoindex(name.c_str());
  if (i == 0) return 0;  // already gone
  Netlink nl;
  Request r(RTM_DELLINK, 0);
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  ifi.ifi_index = static_cast<int>(i);
  r.append(&ifi, sizeof ifi);
  if (int e = nl.call(r); e && e != ENODEV) die("delete " + name, e);
  return 0;
}

int cmdBridges(const std::string& prefix) {
  Netlink nl;
  Request r(RTM_GETLINK, 0);
  ifinfomsg ifi{};
  ifi.ifi_family = AF_UNSPEC;
  r.append(&ifi, sizeof ifi);
  std::vector<std::string> out;
  int e = nl.dump(r, [&](nlmsghdr* m) {
    if (m->nlmsg_type != RTM_NEWLINK) return;
    auto* info = static_cast<ifinfomsg*>(NLMSG_DATA(m));
    int len = static_cast<int>(IFLA_PAYLOAD(m));
    std::string name, kind;
    for (auto* a = IFLA_RTA(info); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
      if (a->rta_type == IFLA_IFNAME) name = static_cast<const char*>(RTA_DATA(a));
      if (a->rta_type == IFLA_LINKINFO) {
        int n = static_cast<int>(RTA_PAYLOAD(a));
        for (auto* b = static_cast<rtattr*>(RTA_DATA(a)); RTA_OK(b, n); b = RTA_NEXT(b, n))
          if (b->rta_type == IFLA_INFO_KIND) kind = static_cast<const char*>(RTA_DATA(b));
      }
    }
    if (kind == "bridge" && name.rfind(prefix, 0) == 0) out.push_back(name);
  });
  if (e) die("list links", e);
  for (auto& n : out) std::printf("%s\n", n.c_str());
  return 0;
}

int usage() {
  std::fprintf(stderr,
               "usage: cgdr-pods-net bridge NAME ADDR/PREFIX\n"
               "       cgdr-pods-net veth HOST BRIDGE PID ADDR/PREFIX\n"
               "       cgdr-pods-net del NAME\n"
               "       cgdr-pods-net bridges PREFIX\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  if (a.size() == 3 && a[0] == "bridge") return cmdBridge(a[1], a[2]);
  if (a.size() == 5 && a[0] == "veth") {
    char* end = nullptr;
    long pid = std::strtol(a[3].c_str(), &end, 10);
    if (pid <= 0 || *end) return usage();
    return cmdVeth(a[1], a[2], static_cast<int>(pid), a[4]);
  }
  if (a.size() == 2 && a[0] == "del") return cmdDel(a[1]);
  if (a.size() == 2 && a[0] == "bridges") return cmdBridges(a[1]);
  return usage();
}
