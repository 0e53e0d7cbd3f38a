#include "engine/handles.hpp"

#include <atomic>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "base/log.hpp"

namespace cgdr::engine::handles {
namespace {

struct Table {
  std::mutex mutex;
  MPI_Comm self = MPI_COMM_NULL;
  std::vector<MPI_Request> pool;
  std::unordered_map<MPI_Request, std::unique_ptr<base::Op>> live;
  std::vector<std::unique_ptr<base::Op>> detached;
};

Table& table() {
  static Table* t = new Table;
  return *t;
}

std::atomic<int> gLive{0};
std::atomic<int> gDetached{0};

MPI_Request newHandle(Table& t) {
  if (!t.pool.empty()) {
    MPI_Request h = t.pool.back();
    t.pool.pop_back();
    return h;
  }
  MPI_Request h = MPI_REQUEST_NULL;
  PMPI_Recv_init(nullptr, 0, MPI_BYTE, MPI_PROC_NULL, 0, t.self, &h);
  return h;
}

}  // namespace

void init() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  if (t.self == MPI_COMM_NULL) PMPI_Comm_dup(MPI_COMM_SELF, &t.self);
}

void fini() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  if (!t.live.empty())
    CGDR_LOG(kWarn, kEngine, "%zu requests still active at MPI_Finalize", t.live.size());
  for (auto& h : t.pool) PMPI_Request_free(&h);
  t.pool.clear();
  if (t.self != MPI_COMM_NULL) PMPI_Comm_free(&t.self);
  t.self = MPI_COMM_NULL;
}

MPI_Request add(std::unique_ptr<base::Op> op) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  MPI_Request h = newHandle(t);
  t.live.emplace(h, std::move(op));
  gLive.fetch_add(1, std::memory_order_relaxed);
  return h;
}

base::Op* find(MPI_Request h) {
  if (h == MPI_REQUEST_NULL || gLive.load(std::memory_order_relaxed) == 0) return nullptr;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.live.find(h);
  return it == t.live.end() ? nullptr : it->second.get();
}

std::unique_ptr<base::Op> take(MPI_Request h) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.live.find(h);
  if (it == t.live.end()) return nullptr;
  auto op = std::move(it->second);
  t.live.erase(it);
  t.pool.push_back(h);
  gLive.fetch_sub(1, std::memory_order_relaxed);
  return op;
}

void detach(MPI_Request h) {
  auto op = take(h);
  if (!op) return;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  t.detached.push_back(std::move(op));
  gDetached.fetch_add(1, std::memory_order_relaxed);
}

bool none() { return gLive.load(std::memory_order_relaxed) == 0; }

void pollDetached() {
  if (gDetached.load(std::memory_order_relaxed) == 0) return;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  for (size_t i = 0; i < t.detached.size();) {
    base::Op& op = *t.detached[i];
    if (!op.persistent() ? op.poll() : (!op.active() || op.poll())) {
      t.detached[i] = std::move(t.detached.back());
      t.detached.pop_back();
      gDetached.fetch_sub(1, std::memory_order_relaxed);
    } else {
      ++i;
    }
  }
}

}  // namespace cgdr::engine::handles
