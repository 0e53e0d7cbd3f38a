// The point-to-point calls MPI-4 added (MPICH 4 has them; Open MPI 4.1 does not: skipped there):
// the large-count calls (MPI_Send_c ... MPI_Recv_init_c) and MPI_Isendrecv(_replace)(_c), each
// against the int calls on the other rank, so that a call cgdr let through to the real MPI would
// never meet its peer's (the test then fails on its timeout). For every pair of buffer kinds and
// every size: every byte, the status's source and tag, and MPI_Get_count_c; truncation and cancel
// of one MPI_Isendrecv(_replace) request. Then counts above
// INT_MAX: of a zero-size type (no memory needed; the type made for the count must be freed by the
// end of the call or with its request), the MPI's verdict on an uncommitted type and a
// negative count, and with --big a real message of 2 GiB + 4099 bytes (host buffers).
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "testlib.hpp"

#if MPI_VERSION >= 4
namespace {

constexpr int kSends = 7, kRecvs = 6;
const char* kSendNames[kSends] = {"Send_c", "Ssend_c", "Isend_c", "Issend_c", "Bsend_c", "Ibsend_c", "Send_init_c"};
const char* kRecvNames[kRecvs] = {"Recv", "Recv_c", "Irecv_c", "Mprobe+Mrecv_c", "Improbe+Imrecv_c", "Recv_init_c"};

void wait(MPI_Request* r, MPI_Status* st) {
  T_MPI(MPI_Wait(r, st));
  T_CHECK(*r == MPI_REQUEST_NULL, "the request was not freed by MPI_Wait");
}

void sendVia(int v, const t::Buf& b, MPI_Count n, int peer, int tag) {
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Request r = MPI_REQUEST_NULL;
  switch (v) {
    case 0: T_MPI(MPI_Send_c(b.ptr(), n, MPI_BYTE, peer, tag, w)); break;
    case 1: T_MPI(MPI_Ssend_c(b.ptr(), n, MPI_BYTE, peer, tag, w)); break;
    case 2: T_MPI(MPI_Isend_c(b.ptr(), n, MPI_BYTE, peer, tag, w, &r)); break;
    case 3: T_MPI(MPI_Issend_c(b.ptr(), n, MPI_BYTE, peer, tag, w, &r)); break;
    case 4: T_MPI(MPI_Bsend_c(b.ptr(), n, MPI_BYTE, peer, tag, w)); break;
    case 5: T_MPI(MPI_Ibsend_c(b.ptr(), n, MPI_BYTE, peer, tag, w, &r)); break;
    default:
      T_MPI(MPI_Send_init_c(b.ptr(), n, MPI_BYTE, peer, tag, w, &r));
      T_MPI(MPI_Start(&r));
      T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
      T_MPI(MPI_Request_free(&r));
      return;
  }
  if (r != MPI_REQUEST_NULL) wait(&r, MPI_STATUS_IGNORE);
}

void recvVia(int v, t::Buf& b, int peer, int tag, MPI_Status* st) {
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Count cap = static_cast<MPI_Count>(b.size());
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Message m = MPI_MESSAGE_NULL;
  switch (v) {
    case 0: T_MPI(MPI_Recv(b.ptr(), static_cast<int>(cap), MPI_BYTE, peer, tag, w, st)); break;
    case 1: T_MPI(MPI_Recv_c(b.ptr(), cap, MPI_BYTE, peer, tag, w, st)); break;
    case 2:
      T_MPI(MPI_Irecv_c(b.ptr(), cap, MPI_BYTE, peer, tag, w, &r));
      wait(&r, st);
      break;
    case 3:
      T_MPI(MPI_Mprobe(peer, tag, w, &m, st));
      T_MPI(MPI_Mrecv_c(b.ptr(), cap, MPI_BYTE, &m, st));
      break;
    case 4: {
      int flag = 0;
      while (!flag) T_MPI(MPI_Improbe(peer, tag, w, &flag, &m, st));
      T_MPI(MPI_Imrecv_c(b.ptr(), cap, MPI_BYTE, &m, &r));
      wait(&r, st);
      break;
    }
    default:
      T_MPI(MPI_Recv_init_c(b.ptr(), cap, MPI_BYTE, peer, tag, w, &r));
      T_MPI(MPI_Start(&r));
      T_MPI(MPI_Wait(&r, st));
      T_MPI(MPI_Request_free(&r));
  }
}

void checkStatus(const MPI_Status& st, int src, int tag, MPI_Count n, const char* what) {
  MPI_Count got = -1;
  MPI_Get_count_c(&st, MPI_BYTE, &got);
  T_CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tag && got == n, "%s: status source %d tag %d count %lld, expected %d %d %lld",
          what, st.MPI_SOURCE, st.MPI_TAG, static_cast<long long>(got), src, tag, static_cast<long long>(n));
}

// One way, then the other: every large-count send against every receive in turn (the receiver
// alternates between the int MPI_Recv and the large-count receives).
void oneWay(t::Kind sk, t::Kind rk, std::size_t n, int me, int peer, int* msg) {
  for (int dir = 0; dir < 2; ++dir) {
    int m = ++*msg;
    int sv = m % kSends, rv = (m / kSends) % kRecvs;
    int sender = dir;
    char what[128];
    std::snprintf(what, sizeof what, "%s->%s %zu B, %s into %s", t::name(sk), t::name(rk), n, kSendNames[sv],
                  kRecvNames[rv]);
    if (me == sender) {
      t::Buf b(sk, n);
      b.fill(t::seedOf(me, m));
      sendVia(sv, b, static_cast<MPI_Count>(n), peer, m);
    } else {
      t::Buf b(rk, n + 16);
      b.poison();
      MPI_Status st;
      recvVia(rv, b, peer, m, &st);
      b.expect(t::seedOf(peer, m), n, what);
      checkStatus(st, peer, m, static_cast<MPI_Count>(n), what);
    }
  }
}

// Where MPICH 4.0 serves MPI_Isendrecv itself (the plain runs), the wait leaves the status as it
// was and completing an MPI_Isendrecv_c frees its datatype once too often (an assertion at the
// next MPI_Type_free); cgdr serves both calls itself.
bool statusKept = true;
bool typeKept = true;

// Both ways at once: this rank's MPI_Isendrecv(_c) against the peer's MPI_Sendrecv, then the
// roles swapped; then MPI_Isendrecv_replace(_c) on both.
void bothWays(t::Kind sk, t::Kind rk, std::size_t n, int me, int peer, int* msg) {
  int ci = static_cast<int>(n);
  for (int who = 0; who < 2; ++who) {
    int m = ++*msg;
    t::Buf out(sk, n), in(rk, n + 16);
    out.fill(t::seedOf(me, m));
    in.poison();
    MPI_Status st;
    const bool large = m % 2 == 0;
    const char* call = large ? "MPI_Isendrecv_c" : "MPI_Isendrecv";
    if (me == who) {
      MPI_Request r = MPI_REQUEST_NULL;
      if (large)
        T_MPI(MPI_Isendrecv_c(out.ptr(), ci, MPI_BYTE, peer, m, in.ptr(), ci + 16, MPI_BYTE, peer, m, MPI_COMM_WORLD,
                              &r));
      else
        T_MPI(MPI_Isendrecv(out.ptr(), ci, MPI_BYTE, peer, m, in.ptr(), ci + 16, MPI_BYTE, peer, m, MPI_COMM_WORLD,
                            &r));
      wait(&r, &st);
    } else {
      T_MPI(MPI_Sendrecv(out.ptr(), ci, MPI_BYTE, peer, m, in.ptr(), ci + 16, MPI_BYTE, peer, m, MPI_COMM_WORLD, &st));
    }
    std::string what = std::string(t::name(sk)) + "->" + t::name(rk) + " " + std::to_string(n) + " B, " +
                       (me == who ? call : "MPI_Sendrecv against " + std::string(call));
    in.expect(t::seedOf(peer, m), n, what.c_str());
    if (me != who || statusKept) checkStatus(st, peer, m, static_cast<MPI_Count>(n), what.c_str());
  }
  int m = ++*msg;
  t::Buf b(sk, n);  // the same kind both ways: the buffer is sent and received
  b.fill(t::seedOf(me, m));
  MPI_Request r = MPI_REQUEST_NULL;
  const bool large = m % 2 == 0;
  if (large)
    T_MPI(MPI_Isendrecv_replace_c(b.ptr(), ci, MPI_BYTE, peer, m, peer, m, MPI_COMM_WORLD, &r));
  else
    T_MPI(MPI_Isendrecv_replace(b.ptr(), ci, MPI_BYTE, peer, m, peer, m, MPI_COMM_WORLD, &r));
  MPI_Status st;
  wait(&r, &st);
  std::string what = std::string(t::name(sk)) + " " + std::to_string(n) + " B, " +
                     (large ? "MPI_Isendrecv_replace_c" : "MPI_Isendrecv_replace");
  b.expect(t::seedOf(peer, m), n, what.c_str());
  if (statusKept) checkStatus(st, peer, m, static_cast<MPI_Count>(n), what.c_str());
}

// MPI_PROC_NULL on either side of MPI_Isendrecv (the edge of a halo exchange). MPICH 4.0's own
// MPI_Isendrecv crashes or hangs there, so the real MPI alone is not asked.
void procNull(int me, int peer, int* msg) {
  int m = ++*msg;
  std::vector<int> out = {me * 1000 + m, 7}, in = {-1, -1}, keep = in;
  MPI_Request r = MPI_REQUEST_NULL;
  MPI_Status st;
  T_MPI(MPI_Isendrecv(out.data(), 2, MPI_INT, MPI_PROC_NULL, m, in.data(), 2, MPI_INT, MPI_PROC_NULL, m,
                      MPI_COMM_WORLD, &r));
  wait(&r, &st);
  T_CHECK(in == keep && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG,
          "Isendrecv with MPI_PROC_NULL both ways: buffer %d %d, source %d, tag %d", in[0], in[1], st.MPI_SOURCE,
          st.MPI_TAG);
  // To the peer, from MPI_PROC_NULL; the peer receives with MPI_Recv.
  int got[2] = {-1, -1};
  if (me == 0) {
    T_MPI(MPI_Isendrecv(out.data(), 2, MPI_INT, peer, m, in.data(), 2, MPI_INT, MPI_PROC_NULL, m, MPI_COMM_WORLD, &r));
    wait(&r, &st);
    T_CHECK(in == keep && st.MPI_SOURCE == MPI_PROC_NULL, "Isendrecv from MPI_PROC_NULL: source %d", st.MPI_SOURCE);
  } else {
    T_MPI(MPI_Recv(got, 2, MPI_INT, peer, m, MPI_COMM_WORLD, &st));
    T_CHECK(got[0] == peer * 1000 + m && got[1] == 7, "Isendrecv to a peer, from MPI_PROC_NULL: got %d %d", got[0],
            got[1]);
  }
  int v = me * 1000 + m + 1;
  T_MPI(MPI_Isendrecv_replace(&v, 1, MPI_INT, MPI_PROC_NULL, m, MPI_PROC_NULL, m, MPI_COMM_WORLD, &r));
  wait(&r, &st);
  T_CHECK(v == me * 1000 + m + 1, "Isendrecv_replace with MPI_PROC_NULL changed the buffer to %d", v);
}

// Whether every datatype made since the last look has been freed. MPICH hands out the handles
// it freed last first: four types made and freed leave four handles on top, and four types made
// afterwards get the same four unless a type made in between (cgdr's for a large count) is still
// alive. Where the MPI reuses handles otherwise, it says so and checks nothing.
class TypeLeaks {
 public:
  TypeLeaks() {
    top_ = takeFour();
    usable_ = takeFour() == top_;
    if (!usable_ && t::rank() == 0)
      std::printf("p2p_mpi4: this MPI does not hand out freed datatype handles again first: "
                  "made types are not checked for leaks\n");
  }
  // `what` ended: every type it made must be free again.
  void check(const std::string& what) {
    if (!usable_) return;
    std::vector<MPI_Datatype> now = takeFour();
    T_CHECK(now == top_, "%s: a datatype made for it is still alive (the freed handles did not come back)",
            what.c_str());
    top_ = now;
  }

 private:
  // Makes four types, frees them in reverse, returns their handles in sorted order.
  static std::vector<MPI_Datatype> takeFour() {
    std::vector<MPI_Datatype> h(4);
    for (MPI_Datatype& d : h) T_MPI(MPI_Type_contiguous(3, MPI_CHAR, &d));
    std::vector<MPI_Datatype> keep = h;
    for (auto d = h.rbegin(); d != h.rend(); ++d) T_MPI(MPI_Type_free(&*d));
    std::sort(keep.begin(), keep.end());
    return keep;
  }

  std::vector<MPI_Datatype> top_;
  bool usable_ = false;
};

// The one request of MPI_Isendrecv(_replace) for two operations (MPI_ERRORS_RETURN): where its
// receive truncates, the wait returns MPI_ERR_TRUNCATE, writes nothing past the buffer, and the
// send still arrives whole; MPI_Cancel cancels a receive no message matches (the status says so)
// while the send, received by the peer before the cancel, stays delivered.
void pairErrors(int me, int peer, int* msg) {
  MPI_Comm w = MPI_COMM_WORLD;
  auto mine = [&](int m) {
    std::vector<int> v(8);
    for (int i = 0; i < 8; ++i) v[i] = me * 100000 + m * 100 + i;
    return v;
  };
  auto peers = [&](int m, int n) {
    std::vector<int> v(n);
    for (int i = 0; i < n; ++i) v[i] = peer * 100000 + m * 100 + i;
    return v;
  };
  for (int replace = 0; replace < 2; ++replace) {
    const char* call = replace ? "MPI_Isendrecv_replace" : "MPI_Isendrecv";
    int m = ++*msg;
    std::vector<int> out = mine(m), in(12, -7);
    MPI_Status st;
    if (me == 0) {  // room for 2 ints; the peer sends 8
      MPI_Request r = MPI_REQUEST_NULL;
      if (replace) {
        std::copy(out.begin(), out.end(), in.begin());
        T_MPI(MPI_Isendrecv_replace(in.data(), 2, MPI_INT, peer, m, peer, m, w, &r));
      } else {
        T_MPI(MPI_Isendrecv(out.data(), 8, MPI_INT, peer, m, in.data(), 2, MPI_INT, peer, m, w, &r));
      }
      int rc = MPI_Wait(&r, &st);
      T_CHECK(t::errorClass(rc) == MPI_ERR_TRUNCATE, "%s, receive truncated: error class %d", call, t::errorClass(rc));
      // Past the 2 ints of room: the replaced buffer still holds ints 2-7 of what it sent, then -7.
      const int kept = replace ? 8 : 2;
      T_CHECK(std::all_of(in.begin() + kept, in.end(), [](int x) { return x == -7; }),
              "%s, receive truncated: written past int %d", call, kept);
      T_CHECK(!replace || std::equal(out.begin() + 2, out.end(), in.begin() + 2),
              "%s, receive truncated: ints 2-7 (outside the 2-int message) changed", call);
    } else {
      if (replace) std::copy(out.begin(), out.end(), in.begin());
      int rc = replace ? MPI_Sendrecv_replace(in.data(), 8, MPI_INT, peer, m, peer, m, w, &st)
                       : MPI_Sendrecv(out.data(), 8, MPI_INT, peer, m, in.data(), 8, MPI_INT, peer, m, w, &st);
      T_CHECK(rc == MPI_SUCCESS, "against a truncating %s: error class %d", call, t::errorClass(rc));
      const int got = replace ? 2 : 8;  // what the peer sent
      int count = -1;
      MPI_Get_count(&st, MPI_INT, &count);
      auto want = peers(m, got);
      T_CHECK(count == got && std::equal(want.begin(), want.end(), in.begin()),
              "against a truncating %s: count %d (expected %d) or data wrong", call, count, got);
    }
  }
  // Cancel: the peer receives this rank's send first, then the receive (for a tag never sent) is
  // cancelled.
  for (int replace = 0; replace < 2; ++replace) {
    const char* call = replace ? "MPI_Isendrecv_replace" : "MPI_Isendrecv";
    int m = ++*msg;
    const int never = m + 50000;
    std::vector<int> out = mine(m), in(8, -7);
    if (me == 0) {
      MPI_Request r = MPI_REQUEST_NULL;
      if (replace) {
        in = out;
        T_MPI(MPI_Isendrecv_replace(in.data(), 8, MPI_INT, peer, m, peer, never, w, &r));
      } else {
        T_MPI(MPI_Isendrecv(out.data(), 8, MPI_INT, peer, m, in.data(), 8, MPI_INT, peer, never, w, &r));
      }
      int flag = 0;
      T_MPI(MPI_Test(&r, &flag, MPI_STATUS_IGNORE));  // (moves the send along)
      T_CHECK(!flag, "%s completed with a receive no message matches", call);
      T_MPI(MPI_Barrier(w));  // the peer has the send
      T_MPI(MPI_Cancel(&r));
      MPI_Status st;
      T_MPI(MPI_Wait(&r, &st));
      int cancelled = 0;
      T_MPI(MPI_Test_cancelled(&st, &cancelled));
      T_CHECK(cancelled, "%s: the status of a cancelled receive says it was not cancelled", call);
      T_CHECK(in == (replace ? out : std::vector<int>(8, -7)), "%s: a cancelled receive changed the buffer", call);
    } else {
      MPI_Status st;
      T_MPI(MPI_Recv(in.data(), 8, MPI_INT, peer, m, w, &st));
      T_CHECK(in == peers(m, 8), "the send of a cancelled %s did not arrive whole", call);
      T_MPI(MPI_Barrier(w));
    }
  }
}

// Counts above INT_MAX without the memory: a type of size 0, so nothing moves, through every
// large-count call that makes a type for the count (blocking, non-blocking and persistent); after
// each, the type made for the count must be freed.
void zeroSize(int me, int peer, int* msg) {
  MPI_Datatype empty;
  T_MPI(MPI_Type_contiguous(0, MPI_INT, &empty));
  T_MPI(MPI_Type_commit(&empty));
  TypeLeaks leaks;
  const MPI_Count huge = static_cast<MPI_Count>(INT_MAX) + 12345;
  char byte = 'x';
  for (int round = 0; round < 3; ++round) {
    int m = ++*msg;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    if (me == 0) {
      if (round == 0) T_MPI(MPI_Send_c(&byte, huge, empty, peer, m, MPI_COMM_WORLD));
      if (round == 1) T_MPI(MPI_Isend_c(&byte, huge, empty, peer, m, MPI_COMM_WORLD, &r));
      if (round == 2) T_MPI(MPI_Send_init_c(&byte, huge, empty, peer, m, MPI_COMM_WORLD, &r));
      if (round == 2) T_MPI(MPI_Start(&r));
      if (r != MPI_REQUEST_NULL) T_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
      if (round == 2) T_MPI(MPI_Request_free(&r));
    } else {
      if (round == 0) T_MPI(MPI_Recv_c(&byte, huge, empty, peer, m, MPI_COMM_WORLD, &st));
      if (round == 1) T_MPI(MPI_Irecv_c(&byte, huge, empty, peer, m, MPI_COMM_WORLD, &r));
      if (round == 2) T_MPI(MPI_Recv_init_c(&byte, huge, empty, peer, m, MPI_COMM_WORLD, &r));
      if (round == 2) T_MPI(MPI_Start(&r));
      if (r != MPI_REQUEST_NULL) T_MPI(MPI_Wait(&r, &st));
      if (round == 2) T_MPI(MPI_Request_free(&r));
      checkStatus(st, peer, m, 0, ("a count above INT_MAX of a zero-size type, round " + std::to_string(round)).c_str());
      T_CHECK(byte == 'x', "a message of a zero-size type wrote into the buffer");
    }
    leaks.check("a count above INT_MAX of a zero-size type, round " + std::to_string(round));
  }
  if (typeKept) {
    int m = ++*msg;
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Status st;
    T_MPI(MPI_Isendrecv_c(&byte, huge, empty, peer, m, &byte, huge, empty, peer, m, MPI_COMM_WORLD, &r));
    wait(&r, &st);
    checkStatus(st, peer, m, 0, "MPI_Isendrecv_c of a zero-size type, counts above INT_MAX");
    leaks.check("MPI_Isendrecv_c of a zero-size type, counts above INT_MAX");
  }
  T_MPI(MPI_Type_free(&empty));
}

// The MPI's verdict on counts it refuses: negative, and above INT_MAX of an uncommitted type;
// with cgdr also a count above INT_MAX of a non-contiguous type (the real MPI alone would read
// gigabytes from the small buffer). Nothing may arrive: the peer's receive for any tag is
// checked to stay empty.
void refused(int peer, bool cgdr) {
  MPI_Comm w = MPI_COMM_WORLD;
  t::RefusedSends sink(peer, {MPI_ANY_TAG}, 64);
  MPI_Datatype loose, holes;
  T_MPI(MPI_Type_contiguous(2, MPI_INT, &loose));  // never committed
  T_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &holes));
  T_MPI(MPI_Type_commit(&holes));
  const MPI_Count huge = static_cast<MPI_Count>(INT_MAX) + 3;
  int buf[8] = {};
  MPI_Request r = MPI_REQUEST_NULL;
  struct Case {
    const char* what;
    int rc;
    int want;                  // the error class
    const char* text = nullptr;  // or, for cgdr's own errors (a class of their own on MPICH), the text
  };
  std::vector<Case> cases = {
      {"Send_c count -1", MPI_Send_c(buf, -1, MPI_INT, peer, 5, w), MPI_ERR_COUNT},
      {"Isend_c count -1", MPI_Isend_c(buf, -1, MPI_INT, peer, 5, w, &r), MPI_ERR_COUNT},
      {"Send_c above INT_MAX, uncommitted type", MPI_Send_c(buf, huge, loose, peer, 5, w), MPI_ERR_TYPE},
      {"Isend_c above INT_MAX, uncommitted type", MPI_Isend_c(buf, huge, loose, peer, 5, w, &r), MPI_ERR_TYPE},
      {"Send_c above INT_MAX, tag -3", MPI_Send_c(buf, huge, MPI_INT, peer, -3, w), MPI_ERR_TAG},
  };
  if (cgdr) {
    cases.push_back({"Send_c above INT_MAX, non-contiguous type", MPI_Send_c(buf, huge, holes, peer, 5, w),
                     MPI_ERR_UNSUPPORTED_OPERATION, "cgdr: operation not supported"});
    cases.push_back({"Isendrecv null request",
                     MPI_Isendrecv(buf, 1, MPI_INT, peer, 5, buf + 4, 1, MPI_INT, peer, 5, w, nullptr), MPI_ERR_ARG,
                     "cgdr: invalid argument"});
  }
  for (const Case& c : cases) {
    std::string text;
    T_CHECK(t::failedAs(c.rc, c.want, c.text, &text), "%s: returned %d, class %d (\"%s\"), expected class %d", c.what,
            c.rc, c.rc == MPI_SUCCESS ? 0 : t::errorClass(c.rc), text.c_str(), c.want);
  }
  T_CHECK(r == MPI_REQUEST_NULL, "a refused MPI_Isend_c set a request");
  sink.check("refused large-count calls");
  MPI_Type_free(&loose);
  MPI_Type_free(&holes);
}

// A message of more than INT_MAX bytes, each byte checked (host buffers; --big).
void big(int me, int peer, int* msg) {
  const std::size_t n = (std::size_t{1} << 31) + 4099;
  int m = ++*msg;
  t::Buf b(t::Kind::H, me == 0 ? n : n + 16);
  MPI_Status st;
  if (me == 0) {
    b.fill(t::seedOf(me, m));
    MPI_Request r;
    T_MPI(MPI_Isend_c(b.ptr(), static_cast<MPI_Count>(n), MPI_BYTE, peer, m, MPI_COMM_WORLD, &r));
    wait(&r, MPI_STATUS_IGNORE);
  } else {
    b.poison();
    T_MPI(MPI_Recv_c(b.ptr(), static_cast<MPI_Count>(b.size()), MPI_BYTE, peer, m, MPI_COMM_WORLD, &st));
    b.expect(t::seedOf(peer, m), n, "2 GiB + 4099 B, Isend_c into Recv_c");
    checkStatus(st, peer, m, static_cast<MPI_Count>(n), "2 GiB + 4099 B");
  }
}

}  // namespace
#endif

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
#if MPI_VERSION < 4
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf("SKIP p2p_mpi4: this MPI (MPI %d.%d) has no MPI-4 point-to-point calls\n", MPI_VERSION,
                             MPI_SUBVERSION);
  MPI_Finalize();
  return 77;
#else
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_mpi4");
  const char* pre = std::getenv("CGDRTEST_PRELOADED");
  const bool cgdr = pre && std::strcmp(pre, "1") == 0;
  const int me = t::rank(), peer = me ^ 1;
  statusKept = typeKept = cgdr || !t::isMpich();
  T_CHECK(t::size() == 2, "p2p_mpi4 runs on two ranks, not %d", t::size());
  auto sizes = t::sizes(argc, argv);
  std::size_t most = 0;
  for (auto s : sizes) most = std::max(most, s);
  std::vector<char> attach(most + 2 * MPI_BSEND_OVERHEAD + 64);
  MPI_Buffer_attach(attach.data(), static_cast<int>(attach.size()));
  int msg = 0;
  for (auto [sk, rk] : pairs)
    for (std::size_t n : sizes) {
      oneWay(sk, rk, n, me, peer, &msg);
      bothWays(sk, rk, n, me, peer, &msg);
    }
  if (cgdr) procNull(me, peer, &msg);
  zeroSize(me, peer, &msg);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  refused(peer, cgdr);
  // (MPICH 4.0.2's own MPI_Isendrecv returns MPI_SUCCESS where its receive truncated, and its
  // MPI_Cancel fails: the plain run there does not ask.)
  if (cgdr || !t::isMpich()) pairErrors(me, peer, &msg);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  if (t::arg(argc, argv, "--big", "no") == "yes") big(me, peer, &msg);
  void* detached = nullptr;
  int detachedSize = 0;
  MPI_Buffer_detach(&detached, &detachedSize);
  return t::finish("p2p_mpi4");
#endif
}
