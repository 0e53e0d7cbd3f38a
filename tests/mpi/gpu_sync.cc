// A cudaMemcpy into a GPU buffer from pageable memory may return before its bytes land (CUDA's
// "API synchronization behavior"), and programs call MPI right after it: the message must carry
// those bytes, whether the buffer is new or already known to cgdr. Collectives (staged through
// pinned memory) and point-to-point messages, fresh and reused buffers of each kind, sizes that
// take different routes; every byte checked against a pattern per rank, round and offset.
// "--how d2d" and "--how memset": a cudaMemcpy from another GPU buffer, or a cudaMemset (one value
// per rank and message), both asynchronous to the host as documented, queued behind a 64 MiB copy
// on the same stream, then MPI at once: the message must carry them too.
#include <mpi.h>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "testlib.hpp"

namespace {

enum class How { kH2d, kD2d, kMemset } gHow = How::kH2d;

// The byte at offset i of message `seed` (a memset writes one value).
std::uint8_t expected(std::uint32_t seed, std::size_t i) { return t::pat(seed, gHow == How::kMemset ? 0 : i); }

void cudaOk(cudaError_t e, const char* what, std::size_t n) {
  if (e != cudaSuccess) T_CHECK(false, "%s of %zu bytes: %s", what, n, cudaGetErrorString(e));
}

// What a program writes, no synchronization after: a pageable vector copied in with cudaMemcpy;
// or, behind a 64 MiB copy queued on the same (legacy default) stream, a cudaMemcpy from a GPU
// buffer holding the pattern, or a cudaMemset.
void copyIn(void* dst, std::uint32_t seed, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = expected(seed, i);
  if (gHow == How::kH2d) return cudaOk(cudaMemcpy(dst, v.data(), n, cudaMemcpyHostToDevice), "cudaMemcpy", n);
  static void* busy[2] = {};
  static void* staged = nullptr;
  constexpr std::size_t kBusy = 64 << 20;
  if (!busy[0]) {
    cudaOk(cudaMalloc(&busy[0], kBusy), "cudaMalloc", kBusy);
    cudaOk(cudaMalloc(&busy[1], kBusy), "cudaMalloc", kBusy);
    cudaOk(cudaMalloc(&staged, 65537), "cudaMalloc", 65537);
  }
  if (gHow == How::kD2d) {
    cudaOk(cudaMemcpy(staged, v.data(), n, cudaMemcpyHostToDevice), "cudaMemcpy", n);
    cudaOk(cudaDeviceSynchronize(), "cudaDeviceSynchronize", n);
  }
  cudaOk(cudaMemcpy(busy[1], busy[0], kBusy, cudaMemcpyDeviceToDevice), "cudaMemcpy (queued before)", kBusy);
  if (gHow == How::kD2d)
    cudaOk(cudaMemcpy(dst, staged, n, cudaMemcpyDeviceToDevice), "cudaMemcpy device to device", n);
  else
    cudaOk(cudaMemset(dst, expected(seed, 0), n), "cudaMemset", n);
}

bool same(const t::Buf& b, std::size_t at, std::uint32_t seed, std::size_t n, const char* what, int round) {
  auto v = b.get();
  for (std::size_t i = 0; i < n; ++i)
    if (v[at + i] != expected(seed, i)) {
      T_CHECK(false, "%s, round %d (%zu bytes into a %s buffer): byte %zu is 0x%02x, expected 0x%02x", what, round, n,
              t::name(b.kind()), i, v[at + i], expected(seed, i));
      return false;
    }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_sync");
  const int me = t::rank(), np = t::size(), peer = me ^ 1;
  const int rounds = std::atoi(t::arg(argc, argv, "--rounds", "24").c_str());
  const std::string how = t::arg(argc, argv, "--how", "h2d");
  gHow = how == "d2d" ? How::kD2d : how == "memset" ? How::kMemset : How::kH2d;
  const std::size_t sizes[] = {1, 4196, 65537};
  const std::size_t most = 65537;
  int msg = 0;
  for (auto [sk, rk] : pairs) {
    if (sk == t::Kind::H) continue;  // a host buffer has no copy in flight
    t::Buf kept(sk, most);           // a buffer cgdr has seen before (after the first round)
    for (int r = 0; r < rounds; ++r) {
      std::size_t n = sizes[r % 3];
      std::unique_ptr<t::Buf> fresh;
      if (r % 2 == 0) fresh = std::make_unique<t::Buf>(sk, n);  // new, often where the last one was
      void* src = fresh ? fresh->ptr() : kept.ptr();
      // Collective: every rank's bytes, just copied in, in every rank's result.
      ++msg;
      copyIn(src, t::seedOf(me, msg), n);
      t::Buf all(rk, n * np);
      T_MPI(MPI_Allgather(src, static_cast<int>(n), MPI_BYTE, all.ptr(), static_cast<int>(n), MPI_BYTE,
                          MPI_COMM_WORLD));
      for (int q = 0; q < np; ++q)
        if (!same(all, q * n, t::seedOf(q, msg), n, "allgather right after the copy", r)) break;
      // Point to point, both ways at once.
      if (peer < np) {
        ++msg;
        copyIn(src, t::seedOf(me, msg), n);
        t::Buf in(rk, n);
        T_MPI(MPI_Sendrecv(src, static_cast<int>(n), MPI_BYTE, peer, msg, in.ptr(), static_cast<int>(n), MPI_BYTE,
                           peer, msg, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        same(in, 0, t::seedOf(peer, msg), n, "sendrecv right after the copy", r);
      }
    }
  }
  return t::finish("gpu_sync");
}
