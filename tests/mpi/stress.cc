// Randomized point-to-point traffic, checked byte-exact: sends of every mode (standard,
// synchronous, buffered), sizes around the eager/rendezvous boundaries, random tags, self
// messages, and per round one receive style per rank (exact, MPI_ANY_TAG, MPI_ANY_SOURCE, probe-
// driven, matched-probe-driven, blocking), plus cancelled receives. Every message carries its id;
// each rank checks it got every message meant for it exactly once with the right envelope.
//   stress [--seed N] [--rounds R] [--kinds XY]   (a failing run prints its seed)
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "testlib.hpp"

namespace {

struct Msg {
  int id, src, dst, tag;
  std::size_t size;
  int mode;  // 0 standard, 1 synchronous, 2 buffered
};

const std::size_t kSizes[] = {0, 1, 3, 100, 4095, 8191, 8192, 8193, 70000, 262143, 262145, 1048579};
constexpr std::size_t kMaxSize = 1048579 + 8;
constexpr int kCancelTag = 31999;

std::uint32_t msgSeed(unsigned seed, int id) { return seed * 2654435761u + static_cast<std::uint32_t>(id); }

void fillMsg(t::Buf& b, const Msg& m, unsigned seed) {
  std::vector<std::uint8_t> v(m.size);
  for (std::size_t i = 0; i < m.size; ++i) v[i] = t::pat(msgSeed(seed, m.id), i);
  if (m.size >= 4) std::memcpy(v.data(), &m.id, 4);
  b.set(v);
}

// Identifies a received message by the envelope and content; false (with a failure) if wrong.
void checkMsg(const std::vector<Msg>& all, const std::vector<std::uint8_t>& got, int count, const MPI_Status& st,
              int me, unsigned seed, std::vector<char>& seen, const std::vector<int>& candidates) {
  // Which message is it? The id is in the payload when there are 4+ bytes; else match envelope.
  const Msg* m = nullptr;
  if (count >= 4) {
    int id;
    std::memcpy(&id, got.data(), 4);
    if (id >= 0 && id < static_cast<int>(all.size())) m = &all[id];
  } else {
    for (int id : candidates)
      if (!seen[id] && all[id].src == st.MPI_SOURCE && all[id].tag == st.MPI_TAG && all[id].size == static_cast<std::size_t>(count)) {
        m = &all[id];
        break;
      }
  }
  if (!m || m->dst != me || seen[m->id]) {
    T_CHECK(false, "seed %u: unexpected or duplicate message (count %d, source %d, tag %d)", seed, count, st.MPI_SOURCE, st.MPI_TAG);
    return;
  }
  seen[m->id] = 1;
  T_CHECK(st.MPI_SOURCE == m->src && st.MPI_TAG == m->tag && count == static_cast<int>(m->size),
          "seed %u: message %d arrived with source %d tag %d count %d, sent from %d tag %d size %zu", seed, m->id,
          st.MPI_SOURCE, st.MPI_TAG, count, m->src, m->tag, m->size);
  for (std::size_t i = 4; i < m->size && i < got.size(); ++i)
    if (got[i] != t::pat(msgSeed(seed, m->id), i)) {
      T_CHECK(false, "seed %u: message %d byte %zu differs", seed, m->id, i);
      break;
    }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "stress");
  const int me = t::rank(), np = t::size();
  unsigned seed = static_cast<unsigned>(std::strtoul(t::arg(argc, argv, "--seed", "1").c_str(), nullptr, 0));
  int rounds = std::atoi(t::arg(argc, argv, "--rounds", "30").c_str());
  if (me == 0) std::printf("stress: seed %u, %d rounds, %d ranks\n", seed, rounds, np);
  std::vector<char> attach(64 << 20);
  MPI_Buffer_attach(attach.data(), static_cast<int>(attach.size()));
  std::mt19937 rng(seed);  // identical schedule on every rank
  std::vector<Msg> all;
  std::vector<char> seen;
  int expected = 0, received = 0;
  for (int round = 0; round < rounds; ++round) {
    int n = 10 + static_cast<int>(rng() % 40);
    std::vector<int> mine;  // ids of this round destined to me
    std::vector<Msg> msgs;
    for (int k = 0; k < n; ++k) {
      Msg m{static_cast<int>(all.size()), static_cast<int>(rng() % np), static_cast<int>(rng() % np),
            static_cast<int>(rng() % 16), kSizes[rng() % 12], static_cast<int>(rng() % 6 == 0 ? 1 : rng() % 9 == 0 ? 2 : 0)};
      all.push_back(m);
      msgs.push_back(m);
      if (m.dst == me) mine.push_back(m.id);
    }
    int style = static_cast<int>((rng() + static_cast<unsigned>(me) * 7u) % 6);  // differs per rank
    bool cancelOne = rng() % 3 == 0;
    seen.resize(all.size(), 0);
    auto [sk, rk] = pairs[round % pairs.size()];
    // Sends first (non-blocking, so no order of posting can deadlock).
    std::vector<std::unique_ptr<t::Buf>> sbufs;
    std::vector<MPI_Request> sreqs;
    for (const Msg& m : msgs) {
      if (m.src != me) continue;
      sbufs.push_back(std::make_unique<t::Buf>(sk, m.size));
      fillMsg(*sbufs.back(), m, seed);
      MPI_Request r;
      int c = static_cast<int>(m.size);
      if (m.mode == 1) T_MPI(MPI_Issend(sbufs.back()->ptr(), c, MPI_BYTE, m.dst, m.tag, MPI_COMM_WORLD, &r));
      else if (m.mode == 2) T_MPI(MPI_Ibsend(sbufs.back()->ptr(), c, MPI_BYTE, m.dst, m.tag, MPI_COMM_WORLD, &r));
      else T_MPI(MPI_Isend(sbufs.back()->ptr(), c, MPI_BYTE, m.dst, m.tag, MPI_COMM_WORLD, &r));
      sreqs.push_back(r);
    }
    if (cancelOne) {
      t::Buf b(rk, 64);
      MPI_Request r;
      T_MPI(MPI_Irecv(b.ptr(), 64, MPI_BYTE, MPI_ANY_SOURCE, kCancelTag, MPI_COMM_WORLD, &r));
      T_MPI(MPI_Cancel(&r));
      MPI_Status st;
      T_MPI(MPI_Wait(&r, &st));
      int c = 0;
      MPI_Test_cancelled(&st, &c);
      T_CHECK(c, "seed %u: cancelled receive not reported cancelled", seed);
    }
    // Receives, in this rank's style for the round.
    std::vector<std::unique_ptr<t::Buf>> rbufs;
    std::vector<MPI_Request> rreqs;
    auto finishOne = [&](t::Buf& b, const MPI_Status& st) {
      int count = 0;
      MPI_Get_count(&st, MPI_BYTE, &count);
      checkMsg(all, b.get(), count, st, me, seed, seen, mine);
      ++received;
    };
    expected += static_cast<int>(mine.size());
    for (int id : mine) {
      const Msg& m = all[id];
      rbufs.push_back(std::make_unique<t::Buf>(rk, kMaxSize));
      t::Buf& b = *rbufs.back();
      MPI_Status st;
      if (style == 0 || style == 1 || style == 2) {  // exact, any tag, any source: non-blocking
        int src = style == 2 ? MPI_ANY_SOURCE : m.src;
        int tag = style == 0 ? m.tag : MPI_ANY_TAG;
        MPI_Request r;
        T_MPI(MPI_Irecv(b.ptr(), static_cast<int>(kMaxSize), MPI_BYTE, src, tag, MPI_COMM_WORLD, &r));
        rreqs.push_back(r);
      } else if (style == 3) {  // probe, then receive what was probed
        T_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        T_MPI(MPI_Recv(b.ptr(), static_cast<int>(kMaxSize), MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st));
        finishOne(b, st);
      } else if (style == 4) {  // matched probe
        MPI_Message msg;
        int flag = 0;
        while (!flag) T_MPI(MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &msg, &st));
        T_MPI(MPI_Mrecv(b.ptr(), static_cast<int>(kMaxSize), MPI_BYTE, &msg, &st));
        finishOne(b, st);
      } else {  // blocking, from the right source, any tag
        T_MPI(MPI_Recv(b.ptr(), static_cast<int>(kMaxSize), MPI_BYTE, m.src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        finishOne(b, st);
      }
    }
    if (!rreqs.empty()) {
      std::vector<MPI_Status> sts(rreqs.size());
      T_MPI(MPI_Waitall(static_cast<int>(rreqs.size()), rreqs.data(), sts.data()));
      for (size_t k = 0; k < rreqs.size(); ++k) finishOne(*rbufs[k], sts[k]);
    }
    T_MPI(MPI_Waitall(static_cast<int>(sreqs.size()), sreqs.data(), MPI_STATUSES_IGNORE));
    MPI_Barrier(MPI_COMM_WORLD);
  }
  T_CHECK(received == expected, "seed %u: received %d of %d messages", seed, received, expected);
  void* d;
  int ds;
  MPI_Buffer_detach(&d, &ds);
  int total = 0;
  MPI_Reduce(&received, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (me == 0) std::printf("stress: %d messages checked\n", total);
  if (t::failures()) std::fprintf(stderr, "stress FAILED with seed %u (rerun with --seed %u)\n", seed, seed);
  return t::finish("stress");
}
