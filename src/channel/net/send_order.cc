#include "channel/net/send_order.hpp"

#include <atomic>
#include <deque>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "channel/net/net_send.hpp"

namespace cgdr::channel::net::send_order {
namespace {

struct Key {
  MPI_Comm comm;
  int peer;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  std::size_t operator()(const Key& k) const {
    return std::hash<MPI_Comm>()(k.comm) * 31 + static_cast<std::size_t>(k.peer);
  }
};

struct Queues {
  std::mutex mutex;
  std::unordered_map<Key, std::deque<NetSend*>, KeyHash> byPeer;
};

Queues& queues() {
  static Queues* q = new Queues;
  return *q;
}

std::atomic<std::size_t> gQueued{0};

// Posts from the head of q while the head's copy is done (or, when waiting, after waiting).
// Caller holds the lock.
void pump(std::deque<NetSend*>& q, bool wait) {
  while (!q.empty()) {
    NetSend* head = q.front();
    if (wait) head->copyWait();
    else if (!head->copyDone()) return;
    q.pop_front();
    gQueued.fetch_sub(1, std::memory_order_relaxed);
    head->post();
  }
}

void pumpPeer(MPI_Comm comm, int peer, bool wait) {
  if (gQueued.load(std::memory_order_relaxed) == 0) return;
  Queues& qs = queues();
  std::lock_guard lock(qs.mutex);
  auto it = qs.byPeer.find({comm, peer});
  if (it == qs.byPeer.end()) return;
  pump(it->second, wait);
  if (it->second.empty()) qs.byPeer.erase(it);
}

void pumpAll(bool wait) {
  if (gQueued.load(std::memory_order_relaxed) == 0) return;
  Queues& qs = queues();
  std::lock_guard lock(qs.mutex);
  for (auto it = qs.byPeer.begin(); it != qs.byPeer.end();) {
    pump(it->second, wait);
    it = it->second.empty() ? qs.byPeer.erase(it) : std::next(it);
  }
}

}  // namespace

void enqueue(NetSend* s) {
  Queues& qs = queues();
  std::lock_guard lock(qs.mutex);
  qs.byPeer[{s->queueComm(), s->queuePeer()}].push_back(s);
  gQueued.fetch_add(1, std::memory_order_relaxed);
}

bool blocked(MPI_Comm comm, int peer) {
  if (gQueued.load(std::memory_order_relaxed) == 0) return false;
  Queues& qs = queues();
  std::lock_guard lock(qs.mutex);
  auto it = qs.byPeer.find({comm, peer});
  return it != qs.byPeer.end() && !it->second.empty();
}

void drain(MPI_Comm comm, int peer) { pumpPeer(comm, peer, false); }
void drainAll() { pumpAll(false); }
void flush(MPI_Comm comm, int peer) { pumpPeer(comm, peer, true); }
void flushAll() { pumpAll(true); }

bool remove(NetSend* s) {
  Queues& qs = queues();
  std::lock_guard lock(qs.mutex);
  auto it = qs.byPeer.find({s->queueComm(), s->queuePeer()});
  if (it == qs.byPeer.end()) return false;
  auto& q = it->second;
  for (auto e = q.begin(); e != q.end(); ++e) {
    if (*e == s) {
      q.erase(e);
      gQueued.fetch_sub(1, std::memory_order_relaxed);
      if (q.empty()) qs.byPeer.erase(it);
      return true;
    }
  }
  return false;
}

std::size_t queued() { return gQueued.load(std::memory_order_relaxed); }

}  // namespace cgdr::channel::net::send_order
