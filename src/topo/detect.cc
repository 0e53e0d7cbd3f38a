#include "topo/detect.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/config.hpp"
#include "base/ids.hpp"
#include "base/log.hpp"
#include "base/shm_file.hpp"

namespace cgdr::topo {
namespace {

base::ChoiceSetting gMode("CGDR_LOCALITY", "container", {"container", "hostname", "off"},
                          "Which ranks count as co-located: container (same host, any namespaces; C-GDR), "
                          "hostname (same hostname only, what MPI libraries do), off (none: all through the real MPI).");

constexpr std::uint64_t kSegmentMagic = 0x544547534c524443ull;  // "CDRLSGET"

struct SegmentHeader {
  std::uint64_t magic;
  std::uint64_t nonce;
  std::uint32_t slots;
  std::uint32_t recordSize;
  std::uint8_t pad[40];
};
static_assert(sizeof(SegmentHeader) == 64);

LocalityTable gTable;

std::uint64_t agreeNonce(MPI_Comm world) {
  std::uint64_t nonce = 0;
  int rank = 0;
  PMPI_Comm_rank(world, &rank);
  if (rank == 0) nonce = base::randomWord();
  PMPI_Bcast(&nonce, 1, MPI_UINT64_T, 0, world);
  return nonce;
}

IdentityRecord* slot(void* base, int i) {
  return reinterpret_cast<IdentityRecord*>(static_cast<char*>(base) + sizeof(SegmentHeader) +
                                           static_cast<std::size_t>(i) * sizeof(IdentityRecord));
}

// Writes the segment's header (every writer stores the same values) and this rank's record, marked
// ready last.
void publish(void* base, const LocalityTable& t, std::uint64_t nonce) {
  auto* h = static_cast<SegmentHeader*>(base);
  h->magic = kSegmentMagic;
  h->nonce = nonce;
  h->slots = static_cast<std::uint32_t>(t.size);
  h->recordSize = sizeof(IdentityRecord);
  IdentityRecord* mine = slot(h, t.rank);
  std::memcpy(static_cast<void*>(mine), &t.me, offsetof(IdentityRecord, ready));
  std::atomic_ref<std::uint64_t>(mine->ready).store(nonce, std::memory_order_release);
}

// Copies every ready record into t->records after the synchronisation; which ranks listed a valid
// one (none where the header is not this run's).
std::vector<bool> readRecords(void* base, std::uint64_t nonce, LocalityTable* t) {
  std::vector<bool> listed(t->size, false);
  auto* h = static_cast<SegmentHeader*>(base);
  bool headerOk = h->magic == kSegmentMagic && h->nonce == nonce && h->slots == static_cast<std::uint32_t>(t->size) &&
                  h->recordSize == sizeof(IdentityRecord);
  if (!headerOk) {
    CGDR_LOG(kWarn, kTopo, "locality segment header invalid: ignored");
    return listed;
  }
  for (int r = 0; r < t->size; ++r) {
    IdentityRecord* s = slot(h, r);
    if (std::atomic_ref<std::uint64_t>(s->ready).load(std::memory_order_acquire) != nonce) continue;
    std::memcpy(static_cast<void*>(&t->records[r]), s, sizeof(IdentityRecord));
    base::Status v = validateRecord(t->records[r], r, nonce);
    if (!v.isOk()) {
      CGDR_LOG(kWarn, kTopo, "%s: ignored", v.message().c_str());
      continue;
    }
    listed[r] = true;
  }
  return listed;
}

}  // namespace

LocalityMode configuredMode() { return static_cast<LocalityMode>(gMode.get().index); }

const LocalityTable& locality() { return gTable; }

base::Status detect(MPI_Comm world) {
  auto t0 = std::chrono::steady_clock::now();
  LocalityTable t;
  t.mode = configuredMode();
  t.generation = gTable.generation + 1;
  PMPI_Comm_rank(world, &t.rank);
  PMPI_Comm_size(world, &t.size);
  std::uint64_t nonce = agreeNonce(world);
  const std::string& dir = base::shmDir();
  base::collectStale(dir);

  t.me = collectIdentity(SysReader(), dir, t.rank, nonce);
  sealRecord(t.me);
  t.shmBytes = sizeof(SegmentHeader) + static_cast<std::size_t>(t.size) * sizeof(IdentityRecord);
  char name[96];
  std::snprintf(name, sizeof name, "%s%016llx-loc", base::shmPrefix().c_str(), static_cast<unsigned long long>(nonce));
  auto seg = base::ShmFile::open(dir, name, t.shmBytes);
  if (seg.isOk()) {
    publish(seg.value().data(), t, nonce);
  } else {
    t.shmProblem = seg.status().message();
    CGDR_LOG(kWarn, kTopo, "no locality segment (%s): every peer goes through the real MPI", t.shmProblem.c_str());
  }

  // The one synchronisation: once it completes every co-located rank has mapped and written.
  std::vector<HostKey> keys(t.size);
  HostKey mineKey = hostKeyOf(t.me);
  PMPI_Allgather(&mineKey, sizeof(HostKey), MPI_BYTE, keys.data(), sizeof(HostKey), MPI_BYTE, world);

  t.records.assign(t.size, IdentityRecord{});
  std::vector<bool> listed(t.size, false);
  if (seg.isOk()) {
    listed = readRecords(seg.value().data(), nonce, &t);
    seg.value().unlink();  // everyone mapped it before the allgather completed
    seg.value().close();
  }
  t.peers.resize(t.size);
  for (int r = 0; r < t.size; ++r) {
    if (keys[r].rank != r) keys[r].rank = r;  // never trust a peer's claim over its position
    t.peers[r] = classifyPeer(t.mode, t.me, keys[r], listed[r] ? &t.records[r] : nullptr);
  }
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  gTable = std::move(t);
  int colocated = 0;
  for (const auto& p : gTable.peers) colocated += p.engine.yes;
  CGDR_LOG(kInfo, kTopo, "locality (%s): %d of %d ranks co-located, %.3f ms, segment %zu bytes", modeName(gTable.mode),
           colocated, gTable.size, gTable.seconds * 1e3, gTable.shmBytes);
  return base::Status::ok();
}

}  // namespace cgdr::topo
