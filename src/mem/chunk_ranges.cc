#include "mem/chunk_ranges.hpp"

#include <iterator>

namespace cgdr::mem {

void ChunkRanges::addChunk(std::uint64_t base, std::size_t size, int device) {
  chunks_[base] = Chunk{size, device};
  free_[base] = size;
}

std::map<std::uint64_t, ChunkRanges::Chunk>::iterator ChunkRanges::chunkOf(std::uint64_t addr) {
  auto it = chunks_.upper_bound(addr);
  if (it == chunks_.begin()) return chunks_.end();
  --it;
  return addr < it->first + it->second.size ? it : chunks_.end();
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

int ChunkRanges::holding(std::uint64_t addr, std::uint64_t* start, std::size_t* size) const {
  auto c = chunks_.upper_bound(addr);
  if (c == chunks_.begin()) return 0;
  --c;
  if (addr >= c->first + c->second.size) return 0;
  auto l = live_.upper_bound(addr);
  if (l == live_.begin()) return -1;
  --l;
  if (addr >= l->first + l->second.first) return -1;
  *start = l->first;
  *size = l->second.first;
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
