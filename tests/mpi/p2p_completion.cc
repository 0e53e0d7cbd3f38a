// The wait/test family over arrays mixing requests of every buffer kind with MPI_REQUEST_NULL
// and inactive persistent requests: Waitall, Testall (no request touched until all are done),
// Waitany, Testany, Waitsome, Testsome, Request_get_status and Request_free of an active request.
#include <algorithm>
#include <memory>
#include <set>
#include <vector>

#include "testlib.hpp"

namespace {

constexpr int kMsgs = 6;
constexpr int kSlots = kMsgs + 2;  // + one MPI_REQUEST_NULL + one inactive persistent request
constexpr std::size_t kBytes = 3001;

struct Receiver {
  std::vector<std::unique_ptr<t::Buf>> bufs;
  std::vector<MPI_Request> reqs;
  MPI_Request inactive = MPI_REQUEST_NULL;
  std::vector<char> dummy = std::vector<char>(8);

  // Slot i < kMsgs receives tag 100+i into a buffer of kind (i odd ? rk : H).
  Receiver(t::Kind rk) {
    for (int i = 0; i < kMsgs; ++i) bufs.push_back(std::make_unique<t::Buf>(i % 2 ? rk : t::Kind::H, kBytes));
    MPI_Recv_init(dummy.data(), 8, MPI_BYTE, 1, 777, MPI_COMM_WORLD, &inactive);
  }
  ~Receiver() { MPI_Request_free(&inactive); }
  void post() {
    reqs.assign(kSlots, MPI_REQUEST_NULL);
    for (int i = 0; i < kMsgs; ++i) {
      bufs[i]->poison();
      T_MPI(MPI_Irecv(bufs[i]->ptr(), kBytes, MPI_BYTE, 1, 100 + i, MPI_COMM_WORLD, &reqs[i]));
    }
    reqs[kMsgs] = MPI_REQUEST_NULL;
    reqs[kMsgs + 1] = inactive;
  }
  void check(int i, const MPI_Status& st, int round, const char* how) {
    char what[96];
    snprintf(what, sizeof what, "%s round %d slot %d", how, round, i);
    T_CHECK(i >= 0 && i < kMsgs, "%s: index %d is not a posted receive", what, i);
    if (i < 0 || i >= kMsgs) return;
    T_CHECK(st.MPI_TAG == 100 + i && st.MPI_SOURCE == 1, "%s: status tag %d source %d", what, st.MPI_TAG, st.MPI_SOURCE);
    bufs[i]->expect(t::seedOf(1, round * 10 + i), kBytes, what);
  }
};

void senderRound(t::Kind sk, int round) {
  // Wait for the go-ahead so the receiver can test before anything arrived.
  T_MPI(MPI_Recv(nullptr, 0, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  std::vector<std::unique_ptr<t::Buf>> bufs;
  std::vector<MPI_Request> reqs(kMsgs);
  for (int j = kMsgs - 1; j >= 0; --j) {  // reverse order, mixed kinds
    bufs.push_back(std::make_unique<t::Buf>(j % 3 ? sk : t::Kind::H, kBytes));
    bufs.back()->fill(t::seedOf(1, round * 10 + j));
    T_MPI(MPI_Isend(bufs.back()->ptr(), kBytes, MPI_BYTE, 0, 100 + j, MPI_COMM_WORLD, &reqs[j]));
  }
  std::vector<MPI_Status> sts(kMsgs);
  T_MPI(MPI_Waitall(kMsgs, reqs.data(), sts.data()));
  for (auto r : reqs) T_CHECK(r == MPI_REQUEST_NULL, "Waitall left a request");
}

void go() { T_MPI(MPI_Send(nullptr, 0, MPI_BYTE, 1, 1, MPI_COMM_WORLD)); }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_completion");
  const int me = t::rank();
  for (auto [sk, rk] : pairs) {
    for (int round = 0; round < 6; ++round) {
      if (me == 1) senderRound(sk, round);
      if (me != 0) continue;
      Receiver rx(rk);
      rx.post();
      std::vector<MPI_Status> sts(kSlots);
      int flag = 1;
      if (round == 0) {  // Testall before anything can arrive: flag 0, nothing modified
        auto before = rx.reqs;
        T_MPI(MPI_Testall(kSlots, rx.reqs.data(), &flag, sts.data()));
        T_CHECK(!flag && rx.reqs == before, "Testall with pending requests modified the array");
        go();
        do T_MPI(MPI_Testall(kSlots, rx.reqs.data(), &flag, sts.data())); while (!flag);
        for (int i = 0; i < kMsgs; ++i) rx.check(i, sts[i], round, "Testall");
      } else if (round == 1) {  // Waitany until MPI_UNDEFINED
        go();
        std::set<int> seen;
        for (;;) {
          int idx = -2;
          MPI_Status st;
          T_MPI(MPI_Waitany(kSlots, rx.reqs.data(), &idx, &st));
          if (idx == MPI_UNDEFINED) break;
          T_CHECK(seen.insert(idx).second, "Waitany returned slot %d twice", idx);
          rx.check(idx, st, round, "Waitany");
        }
        T_CHECK(seen.size() == kMsgs, "Waitany completed %zu of %d", seen.size(), kMsgs);
      } else if (round == 2 || round == 3) {  // Waitsome / Testsome until MPI_UNDEFINED
        go();
        std::set<int> seen;
        std::vector<int> idx(kSlots);
        for (;;) {
          int out = 0;
          if (round == 2) T_MPI(MPI_Waitsome(kSlots, rx.reqs.data(), &out, idx.data(), sts.data()));
          else T_MPI(MPI_Testsome(kSlots, rx.reqs.data(), &out, idx.data(), sts.data()));
          if (out == MPI_UNDEFINED) break;
          for (int k = 0; k < out; ++k) {
            T_CHECK(seen.insert(idx[k]).second, "some: slot %d twice", idx[k]);
            rx.check(idx[k], sts[k], round, round == 2 ? "Waitsome" : "Testsome");
          }
        }
        T_CHECK(seen.size() == kMsgs, "some: completed %zu of %d", seen.size(), kMsgs);
      } else if (round == 4) {  // Testany, and the all-inactive answer
        go();
        int done = 0;
        while (done < kMsgs) {
          int idx = -2;
          MPI_Status st;
          T_MPI(MPI_Testany(kSlots, rx.reqs.data(), &idx, &flag, &st));
          if (flag && idx != MPI_UNDEFINED) {
            rx.check(idx, st, round, "Testany");
            ++done;
          }
        }
        int idx = -2;
        T_MPI(MPI_Testany(kSlots, rx.reqs.data(), &idx, &flag, MPI_STATUS_IGNORE));
        T_CHECK(flag && idx == MPI_UNDEFINED, "Testany on inactive requests: flag %d index %d", flag, idx);
      } else {  // Request_get_status leaves the request; Wait then frees it
        go();
        for (int i = 0; i < kMsgs; ++i) {
          MPI_Status st;
          do T_MPI(MPI_Request_get_status(rx.reqs[i], &flag, &st)); while (!flag);
          T_CHECK(rx.reqs[i] != MPI_REQUEST_NULL, "Request_get_status freed the request");
          rx.check(i, st, round, "Request_get_status");
          T_MPI(MPI_Wait(&rx.reqs[i], MPI_STATUS_IGNORE));
          T_CHECK(rx.reqs[i] == MPI_REQUEST_NULL, "Wait after get_status did not free");
        }
      }
    }
    // Request_free on an active send: the message still arrives intact.
    if (me == 1) {
      t::Buf b(sk, 100000);
      b.fill(t::seedOf(1, 900));
      MPI_Request r;
      T_MPI(MPI_Isend(b.ptr(), 100000, MPI_BYTE, 0, 900, MPI_COMM_WORLD, &r));
      T_MPI(MPI_Request_free(&r));
      T_CHECK(r == MPI_REQUEST_NULL, "Request_free left the handle");
      T_MPI(MPI_Recv(nullptr, 0, MPI_BYTE, 0, 901, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else if (me == 0) {
      t::Buf b(rk, 100000);
      T_MPI(MPI_Recv(b.ptr(), 100000, MPI_BYTE, 1, 900, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      b.expect(t::seedOf(1, 900), 100000, "Request_free'd send");
      T_MPI(MPI_Send(nullptr, 0, MPI_BYTE, 1, 901, MPI_COMM_WORLD));
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  return t::finish("p2p_completion");
}
