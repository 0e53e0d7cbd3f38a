// Receives posted before their message comes, into GPU buffers: cgdr advertises them to the
// sender, which copies straight into them (CGDR_CUDA_PUSH=posted). MPI's rules must hold whether
// the sender claims an advert or the receiver retracts it: posting order against wildcard and
// later receives, non-overtaking with host messages in between, truncation, cancel before and
// after the sender claimed, synchronous sends, probes, both directions at once, blocking sends
// whose receives come a little later, and a window whose receives come after its envelopes. Rank
// 0 sends, rank 1 receives (both send in `bothWays`); every message byte-exact with a pattern per
// rank, message and offset; sizes from the common list.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "testlib.hpp"

namespace {

int gMsg = 0;

// A window of messages one way, the sizes in turn, each receive with its own message and status:
// receivesFirst, every receive posted before any send (two rounds, two tags in turn: advertised
// to the sender); else every send posted before any receive (three rounds, three tags: matched
// from their envelopes, as in a bandwidth test whose receiver is late).
void window(t::Kind sk, t::Kind rk, const std::vector<std::size_t>& sizes, int me, bool receivesFirst) {
  const int tags = receivesFirst ? 2 : 3, tag0 = receivesFirst ? 100 : 800;
  const int w = static_cast<int>(sizes.size()) * tags;
  int base = gMsg;
  gMsg += w;
  std::vector<std::unique_ptr<t::Buf>> bufs;
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(w), MPI_REQUEST_NULL);
  for (int i = 0; i < w; ++i) {
    std::size_t n = sizes[static_cast<std::size_t>(i) % sizes.size()];
    bufs.push_back(std::make_unique<t::Buf>(me == 0 ? sk : rk, n));
    if (me == 1) bufs.back()->poison();
    else bufs.back()->fill(t::seedOf(0, base + i));
  }
  auto post = [&](bool receives) {
    if (receives != (me == 1)) return;
    for (int i = 0; i < w; ++i) {
      int n = static_cast<int>(bufs[i]->size());
      if (receives) MPI_Irecv(bufs[i]->ptr(), n, MPI_BYTE, 0, tag0 + i % tags, MPI_COMM_WORLD, &reqs[i]);
      else MPI_Isend(bufs[i]->ptr(), n, MPI_BYTE, 1, tag0 + i % tags, MPI_COMM_WORLD, &reqs[i]);
    }
  };
  post(receivesFirst);
  MPI_Barrier(MPI_COMM_WORLD);  // every receive posted first, or every envelope sent
  post(!receivesFirst);
  std::vector<MPI_Status> st(static_cast<std::size_t>(w));
  T_MPI(MPI_Waitall(w, reqs.data(), st.data()));
  if (me == 1) {
    for (int i = 0; i < w; ++i) {
      char what[96];
      std::snprintf(what, sizeof what, "%s %s->%s message %d n=%zu", receivesFirst ? "window" : "late window",
                    t::name(sk), t::name(rk), i, bufs[i]->size());
      t::checkStatus(st[i], 0, tag0 + i % tags, bufs[i]->size(), what);
      bufs[i]->expect(t::seedOf(0, base + i), bufs[i]->size(), what);
    }
  }
}

// Both directions at once, as in a bidirectional bandwidth test: rank 0 posts its receives before
// rank 1 sends (advertised), rank 1 posts its receives after rank 0's messages came (matched from
// their envelopes). Every message byte-exact. (Above CGDR_CUDA_PULL_LIMIT both directions must be
// copied by their sender: gpu.push_both_ways checks the counters.)
void bothWays(t::Kind sk, t::Kind rk, const std::vector<std::size_t>& sizes, int me) {
  const int w = static_cast<int>(sizes.size());
  const int peer = 1 - me;
  int base = gMsg;
  gMsg += 2 * w;
  std::vector<std::unique_ptr<t::Buf>> out, in;
  std::vector<MPI_Request> reqs(static_cast<std::size_t>(2 * w), MPI_REQUEST_NULL);
  for (int i = 0; i < w; ++i) {
    std::size_t n = sizes[static_cast<std::size_t>(i)];
    out.push_back(std::make_unique<t::Buf>(sk, n));
    out.back()->fill(t::seedOf(me, base + me * w + i));
    in.push_back(std::make_unique<t::Buf>(rk, n));
    in.back()->poison();
  }
  auto post = [&](bool receives) {
    for (int i = 0; i < w; ++i) {
      t::Buf& b = receives ? *in[i] : *out[i];
      int n = static_cast<int>(b.size());
      if (receives) MPI_Irecv(b.ptr(), n, MPI_BYTE, peer, 700 + i, MPI_COMM_WORLD, &reqs[w + i]);
      else MPI_Isend(b.ptr(), n, MPI_BYTE, peer, 700 + i, MPI_COMM_WORLD, &reqs[i]);
    }
  };
  if (me == 0) post(true);
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0's receives are posted
  post(false);
  MPI_Barrier(MPI_COMM_WORLD);  // rank 0's envelopes are in rank 1's ring
  if (me == 1) post(true);
  std::vector<MPI_Status> st(static_cast<std::size_t>(2 * w));
  T_MPI(MPI_Waitall(2 * w, reqs.data(), st.data()));
  for (int i = 0; i < w; ++i) {
    char what[96];
    std::snprintf(what, sizeof what, "both ways %s->%s, from rank %d, message %d n=%zu", t::name(sk), t::name(rk),
                  peer, i, in[i]->size());
    t::checkStatus(st[w + i], peer, 700 + i, in[i]->size(), what);
    in[i]->expect(t::seedOf(peer, base + peer * w + i), in[i]->size(), what);
  }
}

// Receives (0, tag), (ANY_SOURCE, tag), (0, tag) posted in that order, then three messages of that
// tag: they must land in posting order, whichever of them went by advert.
void postingOrder(t::Kind sk, t::Kind rk, std::size_t n, int me) {
  int base = gMsg;
  gMsg += 3;
  const int tag = 200;
  std::vector<std::unique_ptr<t::Buf>> bufs;
  MPI_Request reqs[3];
  for (int i = 0; i < 3; ++i) {
    bufs.push_back(std::make_unique<t::Buf>(me == 0 ? sk : rk, n));
    if (me == 1) {
      bufs.back()->poison();
      MPI_Irecv(bufs.back()->ptr(), static_cast<int>(n), MPI_BYTE, i == 1 ? MPI_ANY_SOURCE : 0, tag, MPI_COMM_WORLD,
                &reqs[i]);
    } else {
      bufs.back()->fill(t::seedOf(0, base + i));
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0)
    for (int i = 0; i < 3; ++i) MPI_Isend(bufs[i]->ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD, &reqs[i]);
  MPI_Status st[3];
  T_MPI(MPI_Waitall(3, reqs, st));
  if (me == 1)
    for (int i = 0; i < 3; ++i) {
      char what[96];
      std::snprintf(what, sizeof what, "posting order %s->%s receive %d n=%zu", t::name(sk), t::name(rk), i, n);
      t::checkStatus(st[i], 0, tag, n, what);
      bufs[i]->expect(t::seedOf(0, base + i), n, what);
    }
}

// A host message and a GPU message of one tag, the host one sent first, into a GPU receive posted
// before both and a host receive posted after: the host message must take the GPU receive.
void hostFirst(t::Kind sk, t::Kind rk, std::size_t n, int me) {
  int base = gMsg;
  gMsg += 2;
  const int tag = 300;
  t::Buf first(me == 0 ? t::Kind::H : rk, n), second(me == 0 ? sk : t::Kind::H, n);
  MPI_Request reqs[2];
  if (me == 1) {
    first.poison();
    second.poison();
    MPI_Irecv(first.ptr(), static_cast<int>(n), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &reqs[0]);
    MPI_Irecv(second.ptr(), static_cast<int>(n), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &reqs[1]);
  } else {
    first.fill(t::seedOf(0, base));
    second.fill(t::seedOf(0, base + 1));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    MPI_Isend(first.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(second.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD, &reqs[1]);
  }
  MPI_Status st[2];
  T_MPI(MPI_Waitall(2, reqs, st));
  if (me == 1) {
    char what[96];
    std::snprintf(what, sizeof what, "host message first, into %s n=%zu", t::name(rk), n);
    t::checkStatus(st[0], 0, tag, n, what);
    first.expect(t::seedOf(0, base), n, what);
    std::snprintf(what, sizeof what, "%s message second, into host n=%zu", t::name(sk), n);
    t::checkStatus(st[1], 0, tag, n, what);
    second.expect(t::seedOf(0, base + 1), n, what);
  }
}

// A message larger than the advertised receive: MPI_ERR_TRUNCATE; through cgdr also the buffer's
// capacity filled with the message's first bytes and nothing beyond it touched. (MPI leaves the
// buffer's contents open: MPICH alone writes nothing, and Open MPI 4.1 alone writes a truncated
// 4095- or 8191-byte message past the buffer, so the buffer has room for the whole message and
// the bytes are checked only through cgdr.)
void truncation(t::Kind sk, t::Kind rk, std::size_t n, int me) {
  int base = gMsg++;
  const int tag = 400;
  std::size_t cap = n / 2;
  const char* pre = std::getenv("CGDRTEST_PRELOADED");
  bool beyond = pre && *pre == '1';  // through cgdr
  t::Buf b(me == 0 ? sk : rk, me == 0 ? n : n + 64);
  MPI_Request r;
  if (me == 1) {
    b.poison();
    MPI_Irecv(b.ptr(), static_cast<int>(cap), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r);
  } else {
    b.fill(t::seedOf(0, base));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) {
    T_MPI(MPI_Send(b.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD));
    return;
  }
  MPI_Status st;
  int rc = MPI_Wait(&r, &st);
  int cls = t::errorClass(rc);
  T_CHECK(cls == MPI_ERR_TRUNCATE, "truncation %s->%s %zu into %zu: error class %d", t::name(sk), t::name(rk), n, cap, cls);
  char what[96];
  std::snprintf(what, sizeof what, "truncated %s->%s %zu into %zu", t::name(sk), t::name(rk), n, cap);
  std::vector<std::uint8_t> got = b.get();
  std::size_t bad = 0;
  for (std::size_t i = 0; beyond && i < got.size(); ++i)
    bad += got[i] != (i < cap ? t::pat(t::seedOf(0, base), i) : 0xA5);
  T_CHECK(bad == 0, "%s: %zu bytes wrong", what, bad);
}

// Receiver: both buffers poisoned, the first one's receive (n bytes, tag) posted.
MPI_Request postInto(t::Buf& first, t::Buf& second, std::size_t n, int tag) {
  first.poison();
  second.poison();
  MPI_Request r;
  MPI_Irecv(first.ptr(), static_cast<int>(n), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r);
  return r;
}

// Cancel: before any send (cancelled; the message then goes to a later receive), and after the
// sender's synchronous send completed (too late: the receive completes with the message).
void cancels(t::Kind sk, t::Kind rk, std::size_t n, int me) {
  int base = gMsg;
  gMsg += 2;
  const int tag = 500;
  t::Buf a(me == 0 ? sk : rk, n), b(me == 0 ? sk : rk, n);
  if (me == 1) {
    MPI_Request r = postInto(a, b, n, tag);
    MPI_Status st;
    MPI_Cancel(&r);
    T_MPI(MPI_Wait(&r, &st));
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    T_CHECK(cancelled, "cancel of an unmatched advertised receive %s n=%zu did not cancel", t::name(rk), n);
    MPI_Irecv(b.ptr(), static_cast<int>(n), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);  // posted
    MPI_Barrier(MPI_COMM_WORLD);  // the sender's Ssend returned: matched
    MPI_Cancel(&r);
    T_MPI(MPI_Wait(&r, &st));
    MPI_Test_cancelled(&st, &cancelled);
    char what[96];
    std::snprintf(what, sizeof what, "cancel after the match %s->%s n=%zu", t::name(sk), t::name(rk), n);
    T_CHECK(!cancelled, "%s: cancelled a receive whose message was delivered", what);
    t::checkStatus(st, 0, tag, n, what);
    b.expect(t::seedOf(0, base + 1), n, what);
    a.expect(0, 0, "the cancelled receive's buffer");
  } else {
    b.fill(t::seedOf(0, base + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    T_MPI(MPI_Ssend(b.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD));
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

// One receive posted, two messages of its tag sent: the first goes to the receive, the second is
// found by a probe with its size and then received.
void probeAfter(t::Kind sk, t::Kind rk, std::size_t n, int me) {
  int base = gMsg;
  gMsg += 2;
  const int tag = 600;
  t::Buf a(me == 0 ? sk : rk, n), b(me == 0 ? sk : rk, n + 5);
  if (me == 1) {
    MPI_Request r = postInto(a, b, n, tag);
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD);
    T_MPI(MPI_Wait(&r, &st));
    char what[96];
    std::snprintf(what, sizeof what, "before a probe %s->%s n=%zu", t::name(sk), t::name(rk), n);
    t::checkStatus(st, 0, tag, n, what);
    a.expect(t::seedOf(0, base), n, what);
    T_MPI(MPI_Probe(0, tag, MPI_COMM_WORLD, &st));
    std::snprintf(what, sizeof what, "probed %s->%s n=%zu", t::name(sk), t::name(rk), n + 5);
    t::checkStatus(st, 0, tag, n + 5, what);
    T_MPI(MPI_Recv(b.ptr(), static_cast<int>(n + 5), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
    b.expect(t::seedOf(0, base + 1), n + 5, what);
  } else {
    a.fill(t::seedOf(0, base));
    b.fill(t::seedOf(0, base + 1));
    MPI_Barrier(MPI_COMM_WORLD);
    T_MPI(MPI_Send(a.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD));
    T_MPI(MPI_Send(b.ptr(), static_cast<int>(n + 5), MPI_BYTE, 1, tag, MPI_COMM_WORLD));
  }
}

// Sends whose receives are posted a little after them (rank 1 sleeps 2 ms after the barrier): a
// receive posted first and claimed (so the sender expects adverts from this peer), then one posted
// late, which a wait for adverts (gpu.advert_wait: CGDR_CUDA_ADVERT_WAIT=100000 us) lets the
// blocking send find and copy into, the same for a non-blocking send (it waits within MPI_Isend),
// then a late wildcard receive (never advertised), which the wait runs out on before the envelope
// goes. Every message byte-exact either way.
void lateReceives(t::Kind sk, t::Kind rk, std::size_t n, int me) {
  int base = gMsg;
  gMsg += 4;
  const int tag = 800;
  for (int i = 0; i < 4; ++i) {
    t::Buf b(me == 0 ? sk : rk, n);
    char what[96];
    std::snprintf(what, sizeof what, "late receive %d %s->%s n=%zu", i, t::name(sk), t::name(rk), n);
    if (me == 1) {
      b.poison();
      MPI_Request r = MPI_REQUEST_NULL;
      if (i == 0) MPI_Irecv(b.ptr(), static_cast<int>(n), MPI_BYTE, 0, tag, MPI_COMM_WORLD, &r);
      MPI_Barrier(MPI_COMM_WORLD);
      if (i > 0) {
        usleep(2000);
        MPI_Irecv(b.ptr(), static_cast<int>(n), MPI_BYTE, i < 3 ? 0 : MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &r);
      }
      MPI_Status st;
      T_MPI(MPI_Wait(&r, &st));
      t::checkStatus(st, 0, tag, n, what);
      b.expect(t::seedOf(0, base + i), n, what);
    } else {
      b.fill(t::seedOf(0, base + i));
      MPI_Barrier(MPI_COMM_WORLD);
      if (i == 2) {
        MPI_Request r = MPI_REQUEST_NULL;
        T_MPI(MPI_Isend(b.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD, &r));
        T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
      } else {
        T_MPI(MPI_Send(b.ptr(), static_cast<int>(n), MPI_BYTE, 1, tag, MPI_COMM_WORLD));
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "gpu_advert");
  t::needGpus(std::stoi(t::arg(argc, argv, "--min-gpus", "0")), "gpu_advert");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const int me = t::rank();
  std::vector<std::size_t> sizes;
  for (std::size_t n : t::sizes(argc, argv))
    if (n > 0) sizes.push_back(n);  // an empty message has nothing to advertise
  T_CHECK(t::size() == 2, "gpu_advert runs on 2 ranks, not %d", t::size());
  if (t::size() == 2) {
    for (auto [sk, rk] : pairs) {
      window(sk, rk, sizes, me, true);
      window(sk, rk, sizes, me, false);
      bothWays(sk, rk, sizes, me);
      for (std::size_t n : sizes) {
        postingOrder(sk, rk, n, me);
        hostFirst(sk, rk, n, me);
        if (n >= 2) truncation(sk, rk, n, me);
        cancels(sk, rk, n, me);
        probeAfter(sk, rk, n, me);
        lateReceives(sk, rk, n, me);
      }
    }
  }
  return t::finish("gpu_advert");
}
