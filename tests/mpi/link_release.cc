// The cuMem link's socket protocol without a GPU (the fds are memfds): an fd is sent once per
// peer and key, unshare() tells exactly the peers it went to, and the receiving side, reading
// without waiting, keeps the fds of live allocations and closes those released before they were
// ever mapped; a key shared again after its release goes out anew; asking for the mapping of a
// released id answers "none" at once instead of waiting for an fd that never comes. Two ranks.
#include <mpi.h>
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>

#include "channel/cuda_vmm/link.hpp"
#include "plain_check.hpp"

using cgdr::channel::cuda_vmm::Link;

namespace {

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

int memfdOf(std::size_t bytes) {
  int fd = memfd_create("cgdr-link-test", MFD_CLOEXEC);
  if (fd >= 0 && ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  alarm(120);  // a wait for an fd that never comes fails the test instead of hanging it
  int me = 0, n = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (n != 2) {
    if (me == 0) std::printf("SKIP link_release: needs 2 ranks\n");
    MPI_Finalize();
    return 77;
  }
  unsigned long long nonce = std::random_device{}();
  nonce = nonce << 32 | std::random_device{}();
  MPI_Bcast(&nonce, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  auto opened = Link::open(MPI_COMM_WORLD, nonce, {0, 1});
  if (!opened.isOk()) {
    std::fprintf(stderr, "FAIL link: %s\n", opened.status().message().c_str());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  Link& link = *opened.value();
  CHECK(link.connected(1 - me), "not connected to rank %d", 1 - me);
  CHECK(!link.connected(me) && !link.connected(2) && !link.connected(-1), "connected to a rank it has no socket to");

  constexpr int kKeys = 6;
  std::uint64_t ids[kKeys] = {};
  int fdsBefore = openFds();
  if (me == 0) {
    int made = 0;
    for (int k = 0; k < kKeys; ++k) {
      auto id = link.share(1, 100 + k, 4096 * (k + 1), [&] {
        ++made;
        return memfdOf(4096 * (k + 1));
      });
      CHECK(id.isOk(), "share key %d: %s", 100 + k, id.isOk() ? "" : id.status().message().c_str());
      ids[k] = id.isOk() ? id.value() : 0;
      auto again = link.share(1, 100 + k, 4096 * (k + 1), [&] {
        ++made;
        return memfdOf(1);
      });
      CHECK(again.isOk() && again.value() == ids[k], "key %d shared twice got another id", 100 + k);
    }
    CHECK(made == kKeys, "%d fds made for %d keys (each must go once)", made, kKeys);
    for (int k = 0; k < kKeys; k += 2) CHECK(link.unshare(100 + k) == 1, "release of key %d not sent", 100 + k);
    CHECK(link.unshare(100) == 0, "key 100 released twice");
    CHECK(link.unshare(999) == 0, "a key never shared was released");
    // Shared again after its release: a new id and a new fd.
    auto anew = link.share(1, 100, 4096, [] { return memfdOf(4096); });
    CHECK(anew.isOk() && anew.value() != ids[0], "key 100 shared again kept its old id");
    CHECK(openFds() == fdsBefore, "the sender kept fds open (%d, before %d)", openFds(), fdsBefore);
  }
  MPI_Bcast(ids, kKeys, MPI_UINT64_T, 0, MPI_COMM_WORLD);  // rank 0's ids, for rank 1's asks
  MPI_Barrier(MPI_COMM_WORLD);  // everything above is in rank 1's socket now
  if (me == 1) {
    Link::Counts c = link.counts();
    CHECK(c.pending == 0 && c.held == 0, "fds arrived before reading: pending %zu", c.pending);
    link.drain();
    c = link.counts();
    // Keys 101, 103, 105 live; 100, 102, 104 released before being mapped (fds closed); key 100
    // again under its new id.
    CHECK(c.pending == 4, "pending fds %zu, expected 4", c.pending);
    CHECK(c.released == 0 && c.held == 0, "released %zu held %zu without any mapping", c.released, c.held);
    CHECK(openFds() == fdsBefore + 4, "open fds %d, expected %d (released ones closed)", openFds(), fdsBefore + 4);
    link.drain();  // nothing more: returns at once
    CHECK(link.counts().pending == 4, "a second drain changed what is pending");
    // A stale offer naming a released allocation finds nothing (and does not wait).
    for (int k = 0; k < kKeys; k += 2)
      CHECK(link.mapping(0, ids[k], 1, 0) == nullptr, "released id %llu still maps",
            static_cast<unsigned long long>(ids[k]));
    CHECK(link.counts().pending == 4, "asking for released ids changed what is pending");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int all = 0;
  MPI_Allreduce(&plain_check::failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (me == 0) std::printf("%s link_release\n", all ? "FAIL" : "PASS");
  opened.value().reset();
  MPI_Finalize();
  return all ? 1 : 0;
}
