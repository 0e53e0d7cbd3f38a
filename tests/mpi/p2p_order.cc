// Message ordering: non-overtaking per (sender, communicator) across buffer kinds and send calls
// (a host send must not overtake an earlier, still-staging GPU send), receives matched in posting
// order, and MPI_ANY_SOURCE / MPI_ANY_TAG receives.
#include <cstring>
#include <memory>
#include <vector>

#include "testlib.hpp"

namespace {

// A message of n bytes whose pattern is seeded by its sequence number; n >= 4 carries seq first.
std::uint32_t seqSeed(int src, int seq) { return t::seedOf(src, seq, 77); }

void checkMsg(const t::Buf& b, int src, int seq, std::size_t n, const char* what) {
  char w[128];
  snprintf(w, sizeof w, "%s (message %d from %d)", what, seq, src);
  b.expect(seqSeed(src, seq), n, w);
}

// Large GPU send followed at once by a small host send with the same tag: the receiver's first
// receive must get the large one.
void overtakeTest(t::Kind sk, t::Kind rk) {
  const std::size_t big = (16u << 20) + 5, small = 3;
  if (t::rank() == 0) {
    t::Buf a(sk, big), b(t::Kind::H, small);
    a.fill(seqSeed(0, 1));
    b.fill(seqSeed(0, 2));
    MPI_Request r[2];
    T_MPI(MPI_Isend(a.ptr(), static_cast<int>(big), MPI_BYTE, 1, 5, MPI_COMM_WORLD, &r[0]));
    T_MPI(MPI_Isend(b.ptr(), static_cast<int>(small), MPI_BYTE, 1, 5, MPI_COMM_WORLD, &r[1]));
    T_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    // Blocking send right behind a non-blocking GPU send.
    T_MPI(MPI_Isend(a.ptr(), static_cast<int>(big), MPI_BYTE, 1, 6, MPI_COMM_WORLD, &r[0]));
    T_MPI(MPI_Send(b.ptr(), static_cast<int>(small), MPI_BYTE, 1, 6, MPI_COMM_WORLD));
    T_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
  } else if (t::rank() == 1) {
    for (int tag : {5, 6}) {
      t::Buf x(rk, big), y(rk, big);
      MPI_Status s1, s2;
      T_MPI(MPI_Recv(x.ptr(), static_cast<int>(big), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &s1));
      T_MPI(MPI_Recv(y.ptr(), static_cast<int>(big), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &s2));
      int c1 = 0, c2 = 0;
      MPI_Get_count(&s1, MPI_BYTE, &c1);
      MPI_Get_count(&s2, MPI_BYTE, &c2);
      T_CHECK(c1 == static_cast<int>(big) && c2 == static_cast<int>(small),
              "overtaking (tag %d, %s->%s): first receive got %d bytes, second %d", tag,
              t::name(sk), t::name(rk), c1, c2);
      if (c1 == static_cast<int>(big)) checkMsg(x, 0, 1, big, "overtake first");
    }
  }
}

// Many messages of mixed kinds, sizes and send calls to one peer with one tag, in order.
void sequenceTest(t::Kind sk, t::Kind rk) {
  const int kMsgs = 48;
  const std::size_t sizes[] = {1, 70000, 3, 1 << 20, 0, 4095, 300000};
  if (t::rank() == 0) {
    std::vector<std::unique_ptr<t::Buf>> bufs;
    std::vector<MPI_Request> reqs;
    for (int i = 0; i < kMsgs; ++i) {
      std::size_t n = sizes[i % 7];
      t::Kind k = (i % 3 == 0) ? t::Kind::H : sk;
      bufs.push_back(std::make_unique<t::Buf>(k, n));
      bufs.back()->fill(seqSeed(0, i));
      int c = static_cast<int>(n);
      if (i % 5 == 4) {
        T_MPI(MPI_Send(bufs.back()->ptr(), c, MPI_BYTE, 1, 9, MPI_COMM_WORLD));
      } else {
        MPI_Request r;
        if (i % 4 == 1) T_MPI(MPI_Issend(bufs.back()->ptr(), c, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &r));
        else T_MPI(MPI_Isend(bufs.back()->ptr(), c, MPI_BYTE, 1, 9, MPI_COMM_WORLD, &r));
        reqs.push_back(r);
      }
    }
    T_MPI(MPI_Waitall(static_cast<int>(reqs.size()), reqs.data(), MPI_STATUSES_IGNORE));
  } else if (t::rank() == 1) {
    for (int i = 0; i < kMsgs; ++i) {
      std::size_t n = sizes[i % 7];
      t::Buf b(rk, 1 << 20);
      MPI_Status st;
      T_MPI(MPI_Recv(b.ptr(), 1 << 20, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &st));
      int c = -1;
      MPI_Get_count(&st, MPI_BYTE, &c);
      T_CHECK(c == static_cast<int>(n), "sequence: message %d has %d bytes, expected %zu", i, c, n);
      if (c == static_cast<int>(n)) checkMsg(b, 0, i, n, "sequence");
    }
  }
}

// Receives are matched in the order they were posted, wildcards included.
void postingOrderTest(t::Kind sk, t::Kind rk) {
  if (t::rank() == 0) {
    for (int i = 0; i < 3; ++i) {
      t::Buf b(sk, 100 + i);
      b.fill(seqSeed(0, 100 + i));
      T_MPI(MPI_Send(b.ptr(), 100 + i, MPI_BYTE, 1, 20 + i, MPI_COMM_WORLD));
    }
  } else if (t::rank() == 1) {
    t::Buf a(rk, 200), b(rk, 200), c(rk, 200);
    MPI_Request r[3];
    T_MPI(MPI_Irecv(a.ptr(), 200, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &r[0]));
    T_MPI(MPI_Irecv(b.ptr(), 200, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &r[1]));
    T_MPI(MPI_Irecv(c.ptr(), 200, MPI_BYTE, MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, &r[2]));
    MPI_Status st[3];
    T_MPI(MPI_Waitall(3, r, st));
    for (int i = 0; i < 3; ++i)
      T_CHECK(st[i].MPI_TAG == 20 + i, "posting order: receive %d matched tag %d", i, st[i].MPI_TAG);
    checkMsg(a, 0, 100, 100, "posting order a");
    checkMsg(b, 0, 101, 101, "posting order b");
    checkMsg(c, 0, 102, 102, "posting order c");
  }
}

// Rank 0 receives from everyone with MPI_ANY_SOURCE / MPI_ANY_TAG; per-source order must hold.
// Each sender's last two messages are large (past the eager limit and a host chunk): a host one,
// then one of the sender's kind, so that a wildcard receive into a GPU buffer also takes a host
// message through the host chunks where the host pipeline carries it (gpu.p2p_order_chunks fails
// on CGDR_STATS' "not page-locked"). kWildMax: the largest of them, for up to 64 ranks.
constexpr int kPer = 20;
constexpr std::size_t kWildMax = 300000 + 4097 + 64;
std::size_t wildSize(int src, int i) {
  return i >= kPer - 2 ? 300000 + 4097 * static_cast<std::size_t>(i - (kPer - 2)) + static_cast<std::size_t>(src)
                       : 8 + static_cast<std::size_t>(i * 37 + src) % 5000;
}

void wildcardTest(t::Kind sk, t::Kind rk) {
  if (t::rank() != 0) {
    for (int i = 0; i < kPer; ++i) {
      std::size_t n = wildSize(t::rank(), i);
      t::Buf b(i % 2 ? sk : t::Kind::H, n);
      b.fill(seqSeed(t::rank(), i));
      T_MPI(MPI_Send(b.ptr(), static_cast<int>(n), MPI_BYTE, 0, 1000 + i, MPI_COMM_WORLD));
    }
    return;
  }
  std::vector<int> next(t::size(), 0);
  t::Buf b(rk, kWildMax);
  for (int k = 0; k < kPer * (t::size() - 1); ++k) {
    MPI_Status st;
    T_MPI(MPI_Recv(b.ptr(), static_cast<int>(kWildMax), MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
    int src = st.MPI_SOURCE, c = 0;
    MPI_Get_count(&st, MPI_BYTE, &c);
    if (src <= 0 || src >= t::size()) {
      T_CHECK(false, "wildcard: bad source %d", src);
      continue;
    }
    int i = next[src]++;
    T_CHECK(st.MPI_TAG == 1000 + i, "wildcard: from %d got tag %d, expected %d", src, st.MPI_TAG, 1000 + i);
    std::size_t n = wildSize(src, i);
    T_CHECK(c == static_cast<int>(n), "wildcard: from %d message %d has %d bytes", src, i, c);
    auto v = b.get();
    for (std::size_t j = 0; j < n && j < v.size(); ++j) {
      if (v[j] != t::pat(seqSeed(src, i), j)) {
        T_CHECK(false, "wildcard: from %d message %d byte %zu differs", src, i, j);
        break;
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_order");
  for (auto [sk, rk] : pairs) {
    overtakeTest(sk, rk);
    sequenceTest(sk, rk);
    postingOrderTest(sk, rk);
    MPI_Barrier(MPI_COMM_WORLD);
    wildcardTest(sk, rk);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return t::finish("p2p_order");
}
