// Bookkeeping of a sub-allocator over large chunks: which ranges of which chunk are handed out
// and which are free (coalesced, never spanning two chunks). Pure: no CUDA, unit-tested alone;
// the exportable heap (vmm_heap) owns the GPU memory behind the chunks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>

namespace cgdr::mem {

class ChunkRanges {
 public:
  // Alignment of every range handed out (what cudaMalloc guarantees).
  static constexpr std::size_t kAlign = 256;

  // A new chunk, all free.
  void addChunk(std::uint64_t base, std::size_t size, int device);
  // The start of a free range of at least n bytes on `device` (best fit), now handed out; 0 if
  // no chunk of that device has room. n > 0.
  std::uint64_t take(std::size_t n, int device);
  // Gives back the range handed out at p. Returns false (and changes nothing) if p is not the
  // start of a live range. *emptyChunk is set to the base of p's chunk when that chunk has no
  // live range left and was never shared (the caller may release it with dropChunk), else 0.
  bool give(std::uint64_t p, std::uint64_t* emptyChunk);
  // Forgets a chunk with no live range.
  void dropChunk(std::uint64_t base);
  // Marks the chunk holding addr as shared with a peer: it is then kept when it empties.
  void markShared(std::uint64_t addr);
  // The device of the live range starting at p, or -1 if p starts none; its (rounded) size in *size.
  int rangeOf(std::uint64_t p, std::size_t* size) const;
  // Where addr lies: 1 in a live range (its start and rounded size in *start, *size, the base of
  // the chunk holding it in *chunk where asked), -1 in a chunk but in no live range (handed out
  // and given back, or never handed out), 0 in no chunk.
  int holding(std::uint64_t addr, std::uint64_t* start, std::size_t* size, std::uint64_t* chunk = nullptr) const;
  // Keeps an empty, unshared chunk for later requests instead of dropping it (idle until a
  // range of it is taken or it is shared); the heap bounds the idle bytes and trims them.
  void keepIdle(std::uint64_t base);
  std::size_t idleBytes() const { return idleBytes_; }
  // The idle chunk kept longest ago (0 if none): the first to give back.
  std::uint64_t oldestIdle() const;

  struct Totals {
    std::size_t chunks = 0, chunkBytes = 0, sharedChunks = 0, live = 0, liveBytes = 0, freeRanges = 0, freeBytes = 0;
    std::size_t idleChunks = 0, idleBytes = 0;
  };
  Totals totals() const;

 private:
  struct Chunk {
    std::size_t size;
    int device;
    bool shared = false;
    bool idle = false;  // empty and kept (keepIdle)
    std::uint64_t idleSince = 0;  // idleClock_ when it was kept
    std::size_t liveBytes = 0;
  };
  std::map<std::uint64_t, Chunk>::iterator chunkOf(std::uint64_t addr);
  void addFree(std::uint64_t addr, std::size_t size, std::uint64_t chunkBase, std::size_t chunkSize);
  void setIdle(Chunk& c, bool idle);

  std::map<std::uint64_t, Chunk> chunks_;                                // base -> chunk
  std::map<std::uint64_t, std::size_t> free_;                            // start -> size
  std::map<std::uint64_t, std::pair<std::size_t, std::uint64_t>> live_;  // start -> (size, chunk)
  std::size_t idleBytes_ = 0;
  std::uint64_t idleClock_ = 0;
};

}  // namespace cgdr::mem
