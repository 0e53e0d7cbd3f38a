// The bulk chunks taken as blocks of neighbouring chunks (the host rail's blocks), without a GPU:
// Endpoint::takeChunks hands out runs of free chunks that never wrap past the last one and never
// overlap a chunk in use, refuses a run it cannot find, and a block written across chunk
// boundaries reads back whole in the peer's mapping; the peer frees a block's chunks with
// releasePeerChunks (chunksOf: how many a length spans). And the description slots (a receive's
// description of its GPU buffer for a pushing sender): takeDesc hands out each free slot once and
// -1 when none is, a slot's bytes read back whole in the peer's mapping and lie between the flags
// and the chunks, and a slot the peer frees (releasePeerDesc) is handed out again; the staging
// ring's block flags (takeDevSlot / releasePeerDevSlot) likewise. Two ranks, one segment each.
#include <mpi.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "channel/shm/endpoint.hpp"
#include "plain_check.hpp"

using cgdr::channel::shm::Config;
using cgdr::channel::shm::Endpoint;

namespace {

constexpr std::uint32_t kChunks = 8, kChunkBytes = 4096, kDevSlots = 2, kDescSlots = 3;

std::uint8_t pattern(std::size_t off, int round) { return static_cast<std::uint8_t>(off * 131 + round * 7 + off / 4096); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  alarm(120);
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (me == 0) std::printf("SKIP chunk_spans: needs 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  unsigned long long nonce = std::random_device{}();
  nonce = nonce << 32 | std::random_device{}();
  MPI_Bcast(&nonce, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  Config cfg{65536, 64, kChunks, kChunkBytes, kDevSlots, kDescSlots, false};
  auto opened = Endpoint::open(MPI_COMM_WORLD, nonce, {0, 1}, cfg);
  if (!opened.isOk()) {
    std::fprintf(stderr, "FAIL endpoint: %s\n", opened.status().message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Endpoint& ep = *opened.value();
  auto* peer = ep.peer(1 - me);
  CHECK(peer != nullptr, "no peer %d", 1 - me);
  if (!peer) MPI_Abort(MPI_COMM_WORLD, 1);

  // chunksOf: the chunks a block of len bytes spans.
  CHECK(ep.chunksOf(1) == 1 && ep.chunksOf(kChunkBytes) == 1, "one chunk");
  CHECK(ep.chunksOf(kChunkBytes + 1) == 2 && ep.chunksOf(3 * kChunkBytes) == 3 && ep.chunksOf(3 * kChunkBytes + 7) == 4,
        "spans: %u %u %u", ep.chunksOf(kChunkBytes + 1), ep.chunksOf(3 * kChunkBytes), ep.chunksOf(3 * kChunkBytes + 7));

  // Rank 0 takes; rank 1 frees (as a receiver does) and reads what rank 0 wrote.
  std::vector<int> owned(kChunks, 0);
  auto take = [&](std::uint32_t k) {
    int c = ep.takeChunks(k);
    if (c >= 0) {
      CHECK(static_cast<std::uint32_t>(c) + (k ? k : 1) <= kChunks, "run of %u from %d passes the last chunk", k, c);
      for (std::uint32_t j = 0; j < (k ? k : 1); ++j) {
        CHECK(!owned[c + j], "chunk %u handed out twice", c + j);
        owned[c + j] = 1;
      }
    }
    return c;
  };
  int a = -1, b = -1, c = -1, d = -1;
  if (me == 0) {
    CHECK(ep.takeChunks(kChunks + 1) == -1, "a run longer than all chunks");
    a = take(3);  // 0..2
    b = take(4);  // 3..6
    CHECK(a == 0 && b == 3, "runs at %d and %d", a, b);
    CHECK(take(2) == -1, "a run of 2 with one chunk free");
    c = take(0);  // a single chunk: the last one
    CHECK(c == 7, "the last chunk: %d", c);
    CHECK(take(1) == -1, "all chunks taken");
    // A block written across chunk boundaries: chunks 3..6.
    auto* p = reinterpret_cast<std::uint8_t*>(ep.chunk(b));
    for (std::size_t i = 0; i < 4 * kChunkBytes - 5; ++i) p[i] = pattern(i, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    auto* q = reinterpret_cast<const std::uint8_t*>(ep.peerChunk(*peer, 3));
    std::size_t bad = 0;
    for (std::size_t i = 0; i < 4 * kChunkBytes - 5; ++i) bad += q[i] != pattern(i, 1);
    CHECK(bad == 0, "%zu bytes of the 4-chunk block differ in the peer's mapping", bad);
    ep.releasePeerChunks(*peer, 3, ep.chunksOf(4 * kChunkBytes - 5));  // 3..6
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    for (std::uint32_t j = 3; j < 7; ++j) owned[j] = 0;
    CHECK(take(5) == -1, "a run of 5 where 4 are free");
    d = take(2);
    CHECK(d == 3, "run of 2 at %d, expected 3", d);
    int e = take(2);
    CHECK(e == 5, "next run of 2 at %d, expected 5", e);
    CHECK(take(1) == -1, "all taken again");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    ep.releasePeerChunks(*peer, 6, 1);  // 6
    ep.releasePeerChunks(*peer, 7, 1);  // 7
    ep.releasePeerChunks(*peer, 0, 1);  // 0: free, but not next to 7 (no wrap)
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    owned[6] = owned[7] = owned[0] = 0;
    CHECK(take(3) == -1, "a run of 3 wrapping from chunk 6 to 0");
    int f = take(2);
    CHECK(f == 6, "run of 2 at %d, expected 6", f);
    int g = take(1);
    CHECK(g == 0, "single chunk at %d, expected 0", g);
  }
  // Description slots: rank 0 takes them all and writes each; rank 1 reads them and frees one.
  using cgdr::channel::shm::kDescPayload;
  if (me == 0) {
    std::vector<int> slots;
    for (std::uint32_t k = 0; k < kDescSlots; ++k) slots.push_back(ep.takeDesc());
    CHECK(ep.takeDesc() == -1, "a slot handed out with all %u taken", kDescSlots);
    for (std::uint32_t k = 0; k < kDescSlots; ++k) {
      CHECK(slots[k] >= 0 && static_cast<std::uint32_t>(slots[k]) < kDescSlots, "slot %d", slots[k]);
      for (std::uint32_t j = 0; j < k; ++j) CHECK(slots[j] != slots[k], "slot %d handed out twice", slots[k]);
    }
    CHECK(ep.desc(kDescSlots - 1) + kDescPayload <= ep.chunk(0), "the last slot runs into the chunks");
    for (std::uint32_t k = 0; k < kDescSlots; ++k)
      for (std::size_t i = 0; i < kDescPayload; ++i)
        ep.desc(static_cast<int>(k))[i] = static_cast<char>(pattern(i, 10 + k));
    int d0 = ep.takeDevSlot(), d1 = ep.takeDevSlot();
    CHECK(d0 >= 0 && d1 >= 0 && d0 != d1 && d0 < static_cast<int>(kDevSlots) && d1 < static_cast<int>(kDevSlots),
          "ring blocks %d and %d", d0, d1);
    CHECK(ep.takeDevSlot() == -1, "a ring block handed out with all %u taken", kDevSlots);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 1) {
    std::size_t bad = 0;
    for (std::uint32_t k = 0; k < kDescSlots; ++k)
      for (std::size_t i = 0; i < kDescPayload; ++i)
        bad += static_cast<std::uint8_t>(ep.peerDesc(*peer, k)[i]) != pattern(i, 10 + k);
    CHECK(bad == 0, "%zu bytes of the description slots differ in the peer's mapping", bad);
    ep.releasePeerDesc(*peer, 1);
    ep.releasePeerDevSlot(*peer, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    int s1 = ep.takeDesc();
    CHECK(s1 == 1, "the freed slot handed out again: %d, expected 1", s1);
    CHECK(ep.takeDesc() == -1, "all slots taken again");
    int d = ep.takeDevSlot();
    CHECK(d == 1, "the freed ring block handed out again: %d, expected 1", d);
    CHECK(ep.takeDevSlot() == -1, "all ring blocks taken again");
  }
  int all = 0;
  MPI_Allreduce(&plain_check::failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  opened.value().reset();
  if (me == 0) std::printf("%s chunk_spans\n", all ? "FAIL" : "PASS");
  MPI_Finalize();
  return all ? 1 : 0;
}
