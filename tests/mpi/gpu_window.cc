// Windows of GPU messages whose receives were posted first, one way and both ways at once, as in
// bandwidth tests: the sends find their receives advertised and push, and pushes issued while
// earlier copies still run are held and moved together by the copy kernel (CGDR_CUDA_BATCH).
// Each window holds more messages than the kernel takes at once (70 > 64), sizes from the list in
// turn (those above CGDR_CUDA_BATCH_LIMIT go alone, between the others), each message at its own
// offset in one allocation per side, source and destination offsets alike modulo 16 for some
// messages and not for others (the kernel's 16-byte and byte paths, heads and tails). The
// receiver checks every byte of every message against a pattern per rank, message and offset,
// and that every byte between the messages kept its poison (nothing written past a message),
// and each status.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "testlib.hpp"

namespace {

constexpr int kWindow = 70;
constexpr std::uint8_t kPoison = 0xA5;
int gMsg = 0;

struct Layout {
  std::vector<std::size_t> at, n;  // message i: bytes [at[i], at[i] + n[i]) of the side's buffer
  std::size_t total = 0;
};

// Messages one after another, each 64 bytes of gap plus its offset (0..15) past the last one.
Layout layout(const std::vector<std::size_t>& sizes, int round, int mul) {
  Layout l;
  std::size_t pos = 0;
  for (int i = 0; i < kWindow; ++i) {
    std::size_t n = sizes[static_cast<std::size_t>(i) % sizes.size()];
    pos = (pos + 64 + 15) / 16 * 16 + static_cast<std::size_t>(i * mul + round) % 16;
    l.at.push_back(pos);
    l.n.push_back(n);
    pos += n;
  }
  l.total = pos + 64;
  return l;
}

// `from` sends a window to `to` (both ways: each to the other at once); every rank posts its
// receives before any send starts.
void window(t::Kind sk, t::Kind rk, const std::vector<std::size_t>& sizes, int round, bool both) {
  const int me = t::rank();
  const bool sends = both || me == 0, receives = both || me == 1;
  const int peer = 1 - me;
  const Layout src = layout(sizes, round, 7), dst = layout(sizes, round, 5 + (round & 1) * 2);
  const int base = gMsg;
  gMsg += 2 * kWindow;
  t::Buf out(sk, src.total), in(rk, dst.total);
  if (sends) {
    std::vector<std::uint8_t> bytes(src.total, 0x3C);
    for (int i = 0; i < kWindow; ++i)
      for (std::size_t k = 0; k < src.n[i]; ++k) bytes[src.at[i] + k] = t::pat(t::seedOf(me, base + me * kWindow + i), k);
    out.set(bytes);
  }
  in.poison(kPoison);
  std::vector<MPI_Request> reqs(2 * kWindow, MPI_REQUEST_NULL);
  const int tag0 = 300 + (both ? 10 : 0);
  if (receives)
    for (int i = 0; i < kWindow; ++i)
      MPI_Irecv(static_cast<char*>(in.ptr()) + dst.at[i], static_cast<int>(dst.n[i]), MPI_BYTE, peer, tag0 + i % 3,
                MPI_COMM_WORLD, &reqs[kWindow + i]);
  MPI_Barrier(MPI_COMM_WORLD);  // every receive posted (advertised) before the first send
  if (sends)
    for (int i = 0; i < kWindow; ++i)
      MPI_Isend(static_cast<char*>(out.ptr()) + src.at[i], static_cast<int>(src.n[i]), MPI_BYTE, peer, tag0 + i % 3,
                MPI_COMM_WORLD, &reqs[i]);
  std::vector<MPI_Status> st(2 * kWindow);
  T_MPI(MPI_Waitall(2 * kWindow, reqs.data(), st.data()));
  if (!receives) return;
  std::vector<std::uint8_t> got = in.get();
  std::vector<char> inside(dst.total, 0);
  for (int i = 0; i < kWindow; ++i) {
    int count = -1;
    MPI_Get_count(&st[kWindow + i], MPI_BYTE, &count);
    T_CHECK(st[kWindow + i].MPI_SOURCE == peer && st[kWindow + i].MPI_TAG == tag0 + i % 3 &&
                count == static_cast<int>(dst.n[i]),
            "%s->%s round %d%s message %d: status source %d tag %d count %d, expected %d %d %zu", t::name(sk),
            t::name(rk), round, both ? " both ways" : "", i, st[kWindow + i].MPI_SOURCE, st[kWindow + i].MPI_TAG,
            count, peer, tag0 + i % 3, dst.n[i]);
    const std::uint32_t seed = t::seedOf(peer, base + peer * kWindow + i);
    std::size_t bad = 0, first = 0;
    for (std::size_t k = 0; k < dst.n[i]; ++k) {
      inside[dst.at[i] + k] = 1;
      if (got[dst.at[i] + k] != t::pat(seed, k) && bad++ == 0) first = k;
    }
    T_CHECK(bad == 0, "%s->%s round %d%s message %d (n=%zu, source offset %zu, destination offset %zu mod 16): %zu "
                      "bytes wrong, first at %zu",
            t::name(sk), t::name(rk), round, both ? " both ways" : "", i, dst.n[i], src.at[i] % 16, dst.at[i] % 16,
            bad, first);
  }
  std::size_t spoiled = 0, where = 0;
  for (std::size_t k = 0; k < dst.total; ++k)
    if (!inside[k] && got[k] != kPoison && spoiled++ == 0) where = k;
  T_CHECK(spoiled == 0, "%s->%s round %d%s: %zu bytes outside the messages written, first at %zu", t::name(sk),
          t::name(rk), round, both ? " both ways" : "", spoiled, where);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_window");
  std::vector<std::size_t> sizes = t::sizes(argc, argv);
  int rounds = std::atoi(t::arg(argc, argv, "--rounds", "3").c_str());
  if (t::size() == 2)
    for (auto [sk, rk] : pairs)
      for (int r = 0; r < rounds; ++r) {
        window(sk, rk, sizes, r, false);
        window(sk, rk, sizes, r, true);
      }
  return t::finish("gpu_window");
}
