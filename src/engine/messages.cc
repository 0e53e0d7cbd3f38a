#include "engine/messages.hpp"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>

namespace cgdr::engine::messages {
namespace {

struct Entry {
  std::unique_ptr<Unexpected> msg;
  const CommInfo* comm;
};

struct Table {
  std::mutex mutex;
  std::unordered_map<std::uintptr_t, Entry> entries;
  std::uintptr_t next = 1;
};

Table& table() {
  static Table* t = new Table;
  return *t;
}
std::atomic<int> gLive{0};

// Handles: the entry's address where MPI_Message is a pointer (Open MPI); values below MPICH's
// handle-kind bits (never a valid MPICH object) where it is an integer.
// (C casts: MPI_Message is a pointer in one MPI and an int in the other.)
constexpr bool kPointer = std::is_pointer_v<MPI_Message>;
MPI_Message toHandle(std::uintptr_t key) { return (MPI_Message)(kPointer ? key : (0x0A000000 | (key & 0xFFFFFF))); }
std::uintptr_t raw(MPI_Message h) { return (std::uintptr_t)h; }
std::uintptr_t keyOf(MPI_Message h) { return kPointer ? raw(h) : (raw(h) & 0xFFFFFF); }

}  // namespace

MPI_Message add(std::unique_ptr<Unexpected> m, const CommInfo* c) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  std::uintptr_t key;
  if (kPointer) {
    key = reinterpret_cast<std::uintptr_t>(m.get());
  } else {
    key = t.next;
    t.next = t.next % 0xFFFFFF + 1;
  }
  t.entries[key] = {std::move(m), c};
  gLive.fetch_add(1, std::memory_order_relaxed);
  return toHandle(key);
}

const CommInfo* ours(MPI_Message h) {
  if (gLive.load(std::memory_order_relaxed) == 0 || h == MPI_MESSAGE_NULL || h == MPI_MESSAGE_NO_PROC) return nullptr;
  if (!kPointer && (raw(h) & ~std::uintptr_t{0xFFFFFF}) != 0x0A000000) return nullptr;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.entries.find(keyOf(h));
  return it == t.entries.end() ? nullptr : it->second.comm;
}

std::unique_ptr<Unexpected> take(MPI_Message h, const CommInfo** c) {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  auto it = t.entries.find(keyOf(h));
  if (it == t.entries.end()) return nullptr;
  auto m = std::move(it->second.msg);
  *c = it->second.comm;
  t.entries.erase(it);
  gLive.fetch_sub(1, std::memory_order_relaxed);
  return m;
}

}  // namespace cgdr::engine::messages
