#include "channel/cuda_vmm/link.hpp"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/log.hpp"
#include "base/shm_file.hpp"
#include "mem/gpu_copy.hpp"

namespace cgdr::channel::cuda_vmm {
namespace {

// What travels on a pair's socket: an allocation's fd (kFd, with SCM_RIGHTS) or the news that
// one shared earlier is gone (kRelease, no fd): the peer drops its mapping.
struct FdMessage {
  enum : std::uint64_t { kFd = 0, kRelease = 1 };
  std::uint64_t id;
  std::uint64_t size;
  std::uint64_t kind;
};

std::string socketPath(std::uint64_t nonce, int rank) {
  char n[160];
  std::snprintf(n, sizeof n, "%s/%s%016llx-sk-%d", base::shmDir().c_str(), base::shmPrefix().c_str(),
                static_cast<unsigned long long>(nonce), rank);
  return n;
}

bool fillAddr(const std::string& path, sockaddr_un* a) {
  if (path.size() >= sizeof a->sun_path) return false;
  std::memset(a, 0, sizeof *a);
  a->sun_family = AF_UNIX;
  std::memcpy(a->sun_path, path.c_str(), path.size() + 1);
  return true;
}

bool writeAll(int fd, const void* p, std::size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    c += w;
    n -= static_cast<std::size_t>(w);
  }
  return true;
}

bool readAll(int fd, void* p, std::size_t n) {
  char* c = static_cast<char*>(p);
  while (n) {
    ssize_t r = read(fd, c, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    c += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

bool sendFd(int sock, const FdMessage& m, int fd) {
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{const_cast<FdMessage*>(&m), sizeof m};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = control;
  h.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&h);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  return sendmsg(sock, &h, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof m);
}

// A peer that has not read for so long that its socket is full does not make this wait: the
// release is dropped and the peer keeps that mapping until MPI_Finalize (as without releases).
// Once the first bytes went, the rest must follow (waiting), or the stream would break.
bool sendRelease(int sock, std::uint64_t id) {
  FdMessage m{id, 0, FdMessage::kRelease};
  const char* p = reinterpret_cast<const char*>(&m);
  std::size_t done = 0;
  while (done < sizeof m) {
    ssize_t w = send(sock, p + done, sizeof m - done, MSG_NOSIGNAL | (done ? 0 : MSG_DONTWAIT));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += static_cast<std::size_t>(w);
  }
  return true;
}

enum class Got { kMessage, kNone, kBroken };

// One message (a kFd one with its fd in *fd, else -1). `wait`: block until one is there; else
// kNone when none is (a message already begun is read to its end).
Got recvMessage(int sock, FdMessage* m, int* fd, bool wait) {
  char control[CMSG_SPACE(sizeof(int))] = {};
  iovec iov{m, sizeof *m};
  msghdr h{};
  h.msg_iov = &iov;
  h.msg_iovlen = 1;
  h.msg_control = control;
  h.msg_controllen = sizeof control;
  ssize_t r;
  do r = recvmsg(sock, &h, MSG_CMSG_CLOEXEC | (wait ? 0 : MSG_DONTWAIT)); while (r < 0 && errno == EINTR);
  if (r < 0 && !wait && (errno == EAGAIN || errno == EWOULDBLOCK)) return Got::kNone;
  *fd = -1;
  cmsghdr* c = r > 0 ? CMSG_FIRSTHDR(&h) : nullptr;
  if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)))
    std::memcpy(fd, CMSG_DATA(c), sizeof *fd);
  if (r > 0 && r < static_cast<ssize_t>(sizeof *m) &&
      readAll(sock, reinterpret_cast<char*>(m) + r, sizeof *m - static_cast<std::size_t>(r)))
    r = sizeof *m;
  bool whole = r == static_cast<ssize_t>(sizeof *m) && !(h.msg_flags & MSG_CTRUNC);
  bool fits = whole && (m->kind == FdMessage::kFd ? *fd >= 0 : m->kind == FdMessage::kRelease && *fd < 0);
  if (!fits) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return Got::kBroken;
  }
  return Got::kMessage;
}

}  // namespace

base::Result<std::unique_ptr<Link>> Link::open(MPI_Comm world, std::uint64_t nonce, const std::vector<int>& local) {
  std::unique_ptr<Link> link(new Link);
  int me = 0, worldSize = 0;
  PMPI_Comm_rank(world, &me);
  PMPI_Comm_size(world, &worldSize);
  bool active = local.size() > 1;
  std::string path = socketPath(nonce, me);
  int listener = -1;
  std::string problem;
  if (active) {
    sockaddr_un a;
    listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listener < 0 || !fillAddr(path, &a) || bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        listen(listener, 256) != 0)
      problem = "cannot listen on " + path + ": " + std::strerror(errno);
  }
  PMPI_Barrier(world);
  // Connect to every co-located peer of higher rank, then accept those of lower rank.
  for (int peer : local) {
    if (!active || !problem.empty() || peer <= me) continue;
    sockaddr_un a;
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0 || !fillAddr(socketPath(nonce, peer), &a) || connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        !writeAll(s, &me, sizeof me)) {
      problem = "cannot connect to rank " + std::to_string(peer) + ": " + std::strerror(errno);
      if (s >= 0) close(s);
      break;
    }
    link->socks_[peer] = s;
  }
  for (int peer : local) {
    if (!active || !problem.empty() || peer >= me) continue;
    int s = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    int who = -1;
    if (s < 0 || !readAll(s, &who, sizeof who) || who < 0 || who >= worldSize) {
      problem = std::string("accept: ") + std::strerror(errno);
      if (s >= 0) close(s);
      break;
    }
    link->socks_[who] = s;
  }
  if (listener >= 0) close(listener);
  int ok = problem.empty() ? 1 : 0, all = 0;
  PMPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, world);
  if (active) unlink(path.c_str());
  if (!all) {
    if (!problem.empty()) CGDR_LOG(kWarn, kCuda, "cuMem link: %s", problem.c_str());
    return base::Status(base::Errc::kSystem, problem.empty() ? "cuMem link failed on another rank" : problem);
  }
  link->connected_.assign(static_cast<std::size_t>(worldSize), 0);
  for (const auto& [peer, s] : link->socks_) link->connected_[static_cast<std::size_t>(peer)] = 1;
  return link;
}

Link::~Link() {
  for (auto& [peer, s] : socks_) close(s);
  for (auto& [k, v] : pendingFds_) close(v.first);
}

bool Link::connected(int peer) const {
  return peer >= 0 && static_cast<std::size_t>(peer) < connected_.size() && connected_[static_cast<std::size_t>(peer)];
}

mem::VmmBuffer* Link::ring(int device, std::size_t slots, std::size_t slotBytes) {
  std::lock_guard lock(mutex_);
  if (!ring_) {
    auto b = mem::VmmBuffer::create(device, slots * slotBytes);
    if (!b.isOk()) return nullptr;
    ring_ = std::make_unique<mem::VmmBuffer>(std::move(b.value()));
  }
  return ring_.get();
}

base::Result<std::uint64_t> Link::share(int peer, std::uint64_t key, std::size_t size,
                                        const std::function<int()>& makeFd) {
  std::lock_guard lock(mutex_);
  auto it = sent_.find({peer, key});
  if (it != sent_.end()) return it->second;
  auto s = socks_.find(peer);
  if (s == socks_.end()) return base::Status(base::Errc::kUnsupported, "no cuMem link to rank " + std::to_string(peer));
  int fd = makeFd();
  if (fd < 0) return base::Status(base::Errc::kCuda, "cannot export the allocation as a file descriptor");
  std::uint64_t id = nextId_++;
  bool ok = sendFd(s->second, {id, size, FdMessage::kFd}, fd);
  close(fd);
  if (!ok) return base::Status(base::Errc::kSystem, std::string("sending a cuMem fd: ") + std::strerror(errno));
  sent_[{peer, key}] = id;
  return id;
}

std::size_t Link::unshare(std::uint64_t key) {
  std::lock_guard lock(mutex_);
  std::size_t told = 0;
  for (const auto& [peer, sock] : socks_) {
    auto it = sent_.find({peer, key});
    if (it == sent_.end()) continue;
    if (sendRelease(sock, it->second)) ++told;
    sent_.erase(it);
  }
  return told;
}

base::Status Link::receiveFrom(int peer, bool wait, bool* got) {
  FdMessage m;
  int fd = -1;
  *got = false;
  Got g = recvMessage(socks_.at(peer), &m, &fd, wait);
  if (g == Got::kNone) return base::Status::ok();
  if (g == Got::kBroken)
    return base::Status(base::Errc::kPeerLost, "cuMem link to rank " + std::to_string(peer) + " broken");
  *got = true;
  std::pair<int, std::uint64_t> k{peer, m.id};
  if (m.kind == FdMessage::kFd) {
    pendingFds_[k] = {fd, m.size};
    std::uint64_t& last = lastFdId_[peer];
    if (m.id > last) last = m.id;
    return base::Status::ok();
  }
  // Released: the peer freed it after every message naming it completed, so no copy of this
  // rank reads it any more (its completion was this rank's word to the peer); the copy streams
  // are drained first all the same, as unmapping memory a copy still reads would fault.
  if (auto it = pendingFds_.find(k); it != pendingFds_.end()) {
    close(it->second.first);
    pendingFds_.erase(it);
  }
  failed_.erase(k);
  if (auto it = imported_.find(k); it != imported_.end()) {
    mem::quiesceCopies();
    imported_.erase(it);
    ++released_;
  }
  return base::Status::ok();
}

void Link::drain() {
  std::lock_guard lock(mutex_);
  for (const auto& [peer, sock] : socks_) {
    bool got = true;
    while (got)
      if (!receiveFrom(peer, false, &got).isOk()) break;
  }
}

Link::Counts Link::counts() {
  std::lock_guard lock(mutex_);
  return {imported_.size(), released_, pendingFds_.size()};
}

void* Link::mapping(int peer, std::uint64_t id, std::size_t size, int device) {
  std::lock_guard lock(mutex_);
  auto it = imported_.find({peer, id});
  if (it != imported_.end()) return it->second.size >= size ? it->second.map.data() : nullptr;
  if (!socks_.count(peer) || failed_.count({peer, id})) return nullptr;
  // Ids of a peer's fds only grow: an id at or below the last fd read that is not pending was
  // released (its owner freed it: an offer naming it can only be a stale one) and never comes.
  if (auto last = lastFdId_.find(peer); last != lastFdId_.end() && id <= last->second && !pendingFds_.count({peer, id}))
    return nullptr;
  // Its fd was sent before the message naming it: read until it is here.
  bool got = false;
  while (!pendingFds_.count({peer, id}))
    if (!receiveFrom(peer, true, &got).isOk()) return nullptr;
  auto [fd, bytes] = pendingFds_[{peer, id}];
  pendingFds_.erase({peer, id});
  if (bytes < size) {
    close(fd);
    failed_[{peer, id}] = true;
    return nullptr;
  }
  auto m = mem::VmmBuffer::import(fd, bytes, device);
  if (!m.isOk()) {
    CGDR_LOG(kWarn, kCuda, "cannot map cuMem memory of rank %d: %s", peer, m.status().message().c_str());
    failed_[{peer, id}] = true;
    return nullptr;
  }
  void* p = m.value().data();
  imported_.emplace(std::make_pair(peer, id), Imported{bytes, std::move(m.value())});
  return p;
}

}  // namespace cgdr::channel::cuda_vmm
