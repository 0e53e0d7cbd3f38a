#include "engine/comm_table.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <unordered_map>

#include "base/log.hpp"
#include "engine/shm_engine.hpp"

namespace cgdr::engine {

int CommInfo::rankOfWorld(int w) const {
  for (int r = 0; r < size; ++r)
    if (world[r] == w) return r;
  return -1;
}

namespace comms {
namespace {

struct Table {
  std::shared_mutex mutex;
  std::unordered_map<MPI_Comm, std::shared_ptr<CommInfo>> byComm;
  std::unordered_map<int, std::shared_ptr<CommInfo>> byCtx;
  int nextCtx = 2;  // 0: MPI_COMM_WORLD, 1: MPI_COMM_SELF
  std::vector<std::shared_ptr<CommInfo>> freed;  // kept: operations in flight may still name them
};

std::atomic<std::uint64_t> gGeneration{1};
struct Cache {
  MPI_Comm comm = MPI_COMM_NULL;
  const CommInfo* info = nullptr;
  std::uint64_t generation = 0;
};
thread_local Cache tCache __attribute__((tls_model("initial-exec")));

Table& table() {
  static Table* t = new Table;
  return *t;
}

std::shared_ptr<CommInfo> build(MPI_Comm c, int ctx) {
  auto info = std::make_shared<CommInfo>();
  info->comm = c;
  info->ctx = ctx;
  PMPI_Comm_rank(c, &info->rank);
  PMPI_Comm_size(c, &info->size);
  MPI_Group g, wg;
  PMPI_Comm_group(c, &g);
  PMPI_Comm_group(MPI_COMM_WORLD, &wg);
  std::vector<int> ranks(info->size);
  for (int i = 0; i < info->size; ++i) ranks[i] = i;
  info->world.resize(info->size);
  PMPI_Group_translate_ranks(g, info->size, ranks.data(), wg, info->world.data());
  PMPI_Group_free(&g);
  PMPI_Group_free(&wg);
  info->peer.assign(info->size, nullptr);
  ShmEngine* e = ShmEngine::get();
  for (int i = 0; i < info->size; ++i) {
    channel::shm::Peer* p = e && info->world[i] != MPI_UNDEFINED ? e->peerOfWorld(info->world[i]) : nullptr;
    info->peer[i] = p;
    info->anyLocal = info->anyLocal || p;
    info->anyRemote = info->anyRemote || !p;
  }
  return info;
}

void insert(std::shared_ptr<CommInfo> info) {
  Table& t = table();
  std::unique_lock lock(t.mutex);
  t.byComm[info->comm] = info;
  t.byCtx[info->ctx] = info;
  gGeneration.fetch_add(1, std::memory_order_release);
}

}  // namespace

void init() {
  insert(build(MPI_COMM_WORLD, 0));
  insert(build(MPI_COMM_SELF, 1));
}

void fini() {
  Table& t = table();
  std::unique_lock lock(t.mutex);
  t.byComm.clear();
  t.byCtx.clear();
  gGeneration.fetch_add(1, std::memory_order_release);
}

void created(MPI_Comm c) {
  if (c == MPI_COMM_NULL) return;
  int inter = 0;
  PMPI_Comm_test_inter(c, &inter);
  if (inter) return;  // served by the real MPI
  Table& t = table();
  int mine, agreed = 0;
  {
    std::shared_lock lock(t.mutex);
    mine = t.nextCtx;
  }
  PMPI_Allreduce(&mine, &agreed, 1, MPI_INT, MPI_MAX, c);
  {
    std::unique_lock lock(t.mutex);
    if (agreed + 1 > t.nextCtx) t.nextCtx = agreed + 1;
  }
  insert(build(c, agreed));
  CGDR_LOG(kDebug, kEngine, "communicator context %d", agreed);
}

void freed(MPI_Comm c) {
  Table& t = table();
  std::unique_lock lock(t.mutex);
  auto it = t.byComm.find(c);
  if (it == t.byComm.end()) return;
  t.byCtx.erase(it->second->ctx);
  t.freed.push_back(it->second);
  t.byComm.erase(it);
  gGeneration.fetch_add(1, std::memory_order_release);
}

void rebuild() {
  Table& t = table();
  std::unique_lock lock(t.mutex);
  for (auto& [comm, info] : t.byComm) {
    auto fresh = build(comm, info->ctx);
    t.freed.push_back(info);
    info = fresh;
    t.byCtx[fresh->ctx] = fresh;
  }
  gGeneration.fetch_add(1, std::memory_order_release);
}

const CommInfo* find(MPI_Comm c) {
  std::uint64_t g = gGeneration.load(std::memory_order_acquire);
  if (tCache.comm == c && tCache.generation == g) return tCache.info;
  Table& t = table();
  std::shared_lock lock(t.mutex);
  auto it = t.byComm.find(c);
  const CommInfo* info = it == t.byComm.end() ? nullptr : it->second.get();
  tCache = {c, info, g};
  return info;
}

const CommInfo* byContext(int ctx) {
  static thread_local struct {
    int ctx = -1;
    const CommInfo* info = nullptr;
    std::uint64_t generation = 0;
  } last __attribute__((tls_model("initial-exec")));
  std::uint64_t g = gGeneration.load(std::memory_order_acquire);
  if (last.ctx == ctx && last.generation == g) return last.info;
  Table& t = table();
  std::shared_lock lock(t.mutex);
  auto it = t.byCtx.find(ctx);
  const CommInfo* info = it == t.byCtx.end() ? nullptr : it->second.get();
  last = {ctx, info, g};
  return info;
}

}  // namespace comms
}  // namespace cgdr::engine
