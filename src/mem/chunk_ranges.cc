#include "mem/chunk_ranges.hpp"

#include <iterator>

namespace cgdr::mem {

void ChunkRanges::addChunk(std::uint64_t base, std::size_t size, int device) {
  chunks_[base] = Chunk{size, device};
  free_[base] = size;
}

namespace {

// The entry of `ranges` (start -> something with a size) holding addr, or its end().
template <typename Map, typename SizeOf>
auto holder(Map& ranges, std::uint64_t addr, SizeOf sizeOf) -> decltype(ranges.begin()) {
  auto it = ranges.upper_bound(addr);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return addr < it->first + sizeOf(it->second) ? it : ranges.end();
}

}  // namespace

std::map<std::uint64_t, ChunkRanges::Chunk>::iterator ChunkRanges::chunkOf(std::uint64_t addr) {
  return holder(chunks_, addr, [](const Chunk& c) { return c.size; });
}

std::uint64_t ChunkRanges::take(std::size_t n, int device) {
  n = (n + kAlign - 1) / kAlign * kAlign;
  auto best = free_.end();
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < n || (best != free_.end() && it->second >= best->second)) continue;
    if (chunkOf(it->first)->second.device != device) continue;
    best = it;
    if (it->second == n) break;
  }
  if (best == free_.end()) return 0;
  std::uint64_t at = best->first;
  std::size_t rest = best->second - n;
  free_.erase(best);
  if (rest) free_[at + n] = rest;
  auto c = chunkOf(at);
  setIdle(c->second, false);
  c->second.liveBytes += n;
  live_[at] = {n, c->first};
  return at;
}

void ChunkRanges::addFree(std::uint64_t addr, std::size_t size, std::uint64_t chunkBase, std::size_t chunkSize) {
  auto next = free_.lower_bound(addr);
  // Merge with the following free range when it starts where this ends, inside the chunk.
  if (next != free_.end() && next->first == addr + size && next->first < chunkBase + chunkSize) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first >= chunkBase && prev->first + prev->second == addr) {
      prev->second += size;
      return;
    }
  }
  free_[addr] = size;
}

bool ChunkRanges::give(std::uint64_t p, std::uint64_t* emptyChunk) {
  *emptyChunk = 0;
  auto l = live_.find(p);
  if (l == live_.end()) return false;
  auto [size, base] = l->second;
  live_.erase(l);
  Chunk& c = chunks_.at(base);
  c.liveBytes -= size;
  addFree(p, size, base, c.size);
  if (c.liveBytes == 0 && !c.shared) *emptyChunk = base;
  return true;
}

int ChunkRanges::rangeOf(std::uint64_t p, std::size_t* size) const {
  auto l = live_.find(p);
  if (l == live_.end()) return -1;
  *size = l->second.first;
  return chunks_.at(l->second.second).device;
}

int ChunkRanges::holding(std::uint64_t addr, std::uint64_t* start, std::size_t* size, std::uint64_t* chunk) const {
  auto l = holder(live_, addr, [](const auto& v) { return v.first; });
  if (l == live_.end())
    return holder(chunks_, addr, [](const Chunk& c) { return c.size; }) == chunks_.end() ? 0 : -1;
  *start = l->first;
  *size = l->second.first;
  if (chunk) *chunk = l->second.second;
  return 1;
}

void ChunkRanges::setIdle(Chunk& c, bool idle) {
  if (c.idle == idle) return;
  c.idle = idle;
  c.idleSince = idle ? ++idleClock_ : 0;
  if (idle) idleBytes_ += c.size;
  else idleBytes_ -= c.size;
}

void ChunkRanges::keepIdle(std::uint64_t base) {
  auto c = chunks_.find(base);
  if (c != chunks_.end() && c->second.liveBytes == 0 && !c->second.shared) setIdle(c->second, true);
}

std::uint64_t ChunkRanges::oldestIdle() const {
  std::uint64_t base = 0, since = 0;
  for (const auto& [b, c] : chunks_)
    if (c.idle && (!base || c.idleSince < since)) base = b, since = c.idleSince;
  return base;
}

void ChunkRanges::dropChunk(std::uint64_t base) {
  auto c = chunks_.find(base);
  if (c == chunks_.end() || c->second.liveBytes != 0) return;
  setIdle(c->second, false);
  free_.erase(base);  // an empty chunk is one free range from its base
  chunks_.erase(c);
}

void ChunkRanges::markShared(std::uint64_t addr) {
  auto c = chunkOf(addr);
  if (c == chunks_.end()) return;
  setIdle(c->second, false);  // kept anyway, and not trimmed: a peer maps it
  c->second.shared = true;
}

ChunkRanges::Totals ChunkRanges::totals() const {
  Totals t;
  for (const auto& [base, c] : chunks_) {
    ++t.chunks;
    t.chunkBytes += c.size;
    t.sharedChunks += c.shared ? 1 : 0;
    t.idleChunks += c.idle ? 1 : 0;
    t.liveBytes += c.liveBytes;
  }
  t.idleBytes = idleBytes_;
  t.live = live_.size();
  t.freeRanges = free_.size();
  for (const auto& [start, size] : free_) t.freeBytes += size;
  return t;
}

}  // namespace cgdr::mem
