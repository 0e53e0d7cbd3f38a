// Arguments MPI forbids, given to the point-to-point, probe and completion calls with an error
// handler that counts its calls and returns: a bad tag, a negative count, MPI_DATATYPE_NULL, a
// datatype never committed, a null buffer with data, a null request, flag or message handle, a rank
// out of range (at a persistent init, a send, a receive, a probe, either peer of a send-receive; on
// an intercommunicator, of the remote group), bad matched receives of a held message (which keep
// it), MPI_COMM_WORLD freed on one rank. Each call must fail with the error class the MPI itself
// gives (the same program runs on the real MPI alone), call the handler once, move nothing (a
// receive for any tag is posted first and must stay empty) and leave the ranks able to exchange
// messages byte-exact afterwards. cgdr serves messages between co-located ranks without the real
// MPI, so it must make these checks itself rather than crash, hang or send.
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "testlib.hpp"

namespace {

struct Case {
  const char* what;
  std::function<int()> call;
  std::vector<int> expect;  // error classes the MPI may give
  const char* text = nullptr;  // or: an error whose string holds this (cgdr's own codes are in a
                               // class of their own where the MPI would not show their text: MPICH)
};

// Runs each case: refused once within a minute (t::expectRefused; a case frees a request its call
// wrongly made, with freeIfMade, so one defect does not stall the rest), the handler being that of
// `comm` unless it is MPI_COMM_NULL. Only the intercommunicator's cases name theirs: the other
// cases run on MPI_COMM_WORLD before any other communicator in use has the counting handler.
void refuseAll(const std::vector<Case>& cases, const char* kinds, MPI_Comm comm = MPI_COMM_NULL) {
  for (const Case& c : cases)
    t::expectRefused(c.call, c.expect, c.text, comm, std::string(c.what) + " (" + kinds + ")");
}

void freeIfMade(MPI_Request* r, const char* what) {
  if (*r == MPI_REQUEST_NULL) return;
  T_CHECK(false, "%s: made a request", what);
  MPI_Request_free(r);
}

void badCalls(t::Kind sk, t::Kind rk, int msg, bool cgdr) {
  const int peer = t::rank() ^ 1;
  const int n = 64;
  t::Buf sb(sk, n * sizeof(int)), rb(rk, n * sizeof(int));
  sb.fill(t::seedOf(t::rank(), msg));
  rb.poison();
  void* s = sb.ptr();
  void* r = rb.ptr();
  int* tagUbPtr = nullptr;
  int flagAttr = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tagUbPtr, &flagAttr);
  const int tagUb = flagAttr ? *tagUbPtr : 32767;
  MPI_Datatype loose;  // never committed
  MPI_Type_contiguous(2, MPI_INT, &loose);
  const MPI_Comm w = MPI_COMM_WORLD;
  const std::vector<int> tagErr{MPI_ERR_TAG}, countErr{MPI_ERR_COUNT}, typeErr{MPI_ERR_TYPE},
      bufErr{MPI_ERR_BUFFER}, reqErr{MPI_ERR_REQUEST, MPI_ERR_ARG}, argErr{MPI_ERR_ARG},
      countOrArg{MPI_ERR_COUNT, MPI_ERR_ARG}, rankErr{MPI_ERR_RANK};
  MPI_Request q = MPI_REQUEST_NULL;
  MPI_Status st;
  int flag = 0;
  MPI_Message m = MPI_MESSAGE_NULL;

  // A good exchange first: the calls below must be refused also where cgdr has seen MPI_INT at
  // work (cgdr asks the real MPI about a datatype only the first time).
  T_MPI(MPI_Sendrecv(s, n, MPI_INT, peer, 3, r, n, MPI_INT, peer, 3, w, &st));
  rb.expect(t::seedOf(peer, msg), n * sizeof(int), "first exchange");
  rb.poison();
  t::RefusedSends sink(peer, {MPI_ANY_TAG}, n * sizeof(int));
  // The persistent inits first, while MPI_INT is fresh from the exchange above: their ranks are
  // checked on their own, not only where the datatype is new.
  std::vector<Case> cases = {
      {"Ssend_init rank out of range",
       [&] { int rc = MPI_Ssend_init(s, 4, MPI_INT, t::size() + 3, 5, w, &q); freeIfMade(&q, "Ssend_init"); return rc; },
       rankErr},
      {"Recv_init rank -4",
       [&] { int rc = MPI_Recv_init(r, 4, MPI_INT, -4, 5, w, &q); freeIfMade(&q, "Recv_init"); return rc; }, rankErr},
      {"Send tag -5", [&] { return MPI_Send(s, 4, MPI_INT, peer, -5, w); }, tagErr},
      {"Send MPI_ANY_TAG", [&] { return MPI_Send(s, 4, MPI_INT, peer, MPI_ANY_TAG, w); }, tagErr},
      {"Ssend count -1", [&] { return MPI_Ssend(s, -1, MPI_INT, peer, 5, w); }, countErr},
      {"Rsend MPI_DATATYPE_NULL", [&] { return MPI_Rsend(s, 1, MPI_DATATYPE_NULL, peer, 5, w); }, typeErr},
      {"Bsend MPI_DATATYPE_NULL", [&] { return MPI_Bsend(s, 1, MPI_DATATYPE_NULL, peer, 5, w); }, typeErr},
      {"Send uncommitted type", [&] { return MPI_Send(s, 2, loose, peer, 5, w); }, typeErr},
      {"Send null buffer", [&] { return MPI_Send(nullptr, 4, MPI_INT, peer, 5, w); }, bufErr},
      {"Isend tag -5", [&] { int rc = MPI_Isend(s, 4, MPI_INT, peer, -5, w, &q); freeIfMade(&q, "Isend"); return rc; },
       tagErr},
      {"Issend uncommitted type",
       [&] { int rc = MPI_Issend(s, 1, loose, peer, 5, w, &q); freeIfMade(&q, "Issend"); return rc; }, typeErr},
      {"Isend null request", [&] { return MPI_Isend(s, 4, MPI_INT, peer, 5, w, nullptr); }, reqErr},
      {"Irsend count -3", [&] { int rc = MPI_Irsend(s, -3, MPI_INT, peer, 5, w, &q); freeIfMade(&q, "Irsend"); return rc; },
       countErr},
      {"Send_init tag -5",
       [&] { int rc = MPI_Send_init(s, 4, MPI_INT, peer, -5, w, &q); freeIfMade(&q, "Send_init"); return rc; }, tagErr},
      {"Bsend_init null request", [&] { return MPI_Bsend_init(s, 4, MPI_INT, peer, 5, w, nullptr); }, reqErr},
      {"Recv tag -5", [&] { return MPI_Recv(r, 4, MPI_INT, peer, -5, w, &st); }, tagErr},
      {"Recv count -1", [&] { return MPI_Recv(r, -1, MPI_INT, peer, 5, w, &st); }, countErr},
      {"Recv MPI_DATATYPE_NULL", [&] { return MPI_Recv(r, 1, MPI_DATATYPE_NULL, peer, 5, w, &st); }, typeErr},
      {"Recv uncommitted type, any source",
       [&] { return MPI_Recv(r, 1, loose, MPI_ANY_SOURCE, 5, w, &st); }, typeErr},
      {"Recv null buffer", [&] { return MPI_Recv(nullptr, 4, MPI_INT, peer, 5, w, &st); }, bufErr},
      {"Irecv null request", [&] { return MPI_Irecv(r, 4, MPI_INT, peer, 5, w, nullptr); }, reqErr},
      {"Irecv tag -2", [&] { int rc = MPI_Irecv(r, 4, MPI_INT, peer, -2, w, &q); freeIfMade(&q, "Irecv"); return rc; },
       tagErr},
      {"Recv_init count -1",
       [&] { int rc = MPI_Recv_init(r, -1, MPI_INT, peer, 5, w, &q); freeIfMade(&q, "Recv_init"); return rc; },
       countErr},
      {"Sendrecv send tag -5",
       [&] { return MPI_Sendrecv(s, 4, MPI_INT, peer, -5, r, 4, MPI_INT, peer, 5, w, &st); }, tagErr},
      {"Sendrecv receive count -1",
       [&] { return MPI_Sendrecv(s, 4, MPI_INT, peer, 5, r, -1, MPI_INT, peer, 5, w, &st); }, countErr},
      {"Sendrecv destination out of range",
       [&] { return MPI_Sendrecv(s, 4, MPI_INT, t::size() + 1, 5, r, 4, MPI_INT, peer, 5, w, &st); }, rankErr},
      {"Sendrecv source out of range",
       [&] { return MPI_Sendrecv(s, 4, MPI_INT, peer, 5, r, 4, MPI_INT, t::size() + 5, 5, w, &st); }, rankErr},
      {"Sendrecv destination -7, receiving from itself",
       [&] { return MPI_Sendrecv(s, 4, MPI_INT, -7, 5, r, 4, MPI_INT, t::rank(), 5, w, &st); }, rankErr},
      {"Sendrecv_replace destination out of range",
       [&] { return MPI_Sendrecv_replace(r, 4, MPI_INT, t::size(), 5, peer, 5, w, &st); }, rankErr},
      {"Sendrecv_replace source -9", [&] { return MPI_Sendrecv_replace(r, 4, MPI_INT, peer, 5, -9, 5, w, &st); },
       rankErr},
      {"Send destination out of range", [&] { return MPI_Send(s, 4, MPI_INT, t::size() + 2, 5, w); }, rankErr},
      {"Isend destination -7",
       [&] { int rc = MPI_Isend(s, 4, MPI_INT, -7, 5, w, &q); freeIfMade(&q, "Isend"); return rc; }, rankErr},
      {"Recv source out of range", [&] { return MPI_Recv(r, 4, MPI_INT, t::size() + 2, 5, w, &st); }, rankErr},
      {"Irecv source -9",
       [&] { int rc = MPI_Irecv(r, 4, MPI_INT, -9, 5, w, &q); freeIfMade(&q, "Irecv"); return rc; }, rankErr},
      {"Probe source out of range", [&] { return MPI_Probe(t::size() + 4, 5, w, &st); }, rankErr},
      {"Iprobe source -9", [&] { return MPI_Iprobe(-9, 5, w, &flag, &st); }, rankErr},
      {"Sendrecv_replace uncommitted type",
       [&] { return MPI_Sendrecv_replace(r, 1, loose, peer, 5, peer, 5, w, &st); }, typeErr},
      {"Probe tag -7", [&] { return MPI_Probe(peer, -7, w, &st); }, tagErr},
      {"Iprobe tag -7", [&] { return MPI_Iprobe(MPI_ANY_SOURCE, -7, w, &flag, &st); }, tagErr},
      {"Mprobe tag -7", [&] { return MPI_Mprobe(peer, -7, w, &m, &st); }, tagErr},
      {"Improbe null message", [&] { return MPI_Improbe(peer, 5, w, &flag, nullptr, &st); }, reqErr},
      {"Wait null request", [&] { return MPI_Wait(nullptr, &st); }, reqErr},
      {"Test null flag", [&] { MPI_Request none = MPI_REQUEST_NULL; return MPI_Test(&none, nullptr, &st); }, argErr},
      {"Waitall count -1", [&] { return MPI_Waitall(-1, &q, MPI_STATUSES_IGNORE); }, countOrArg},
      {"Request_free null", [&] { return MPI_Request_free(nullptr); }, reqErr},
      {"Cancel null", [&] { return MPI_Cancel(nullptr); }, reqErr},
      {"Start null", [&] { return MPI_Start(nullptr); }, reqErr},
  };
  if (tagUb < INT_MAX)
    cases.push_back({"Send tag above MPI_TAG_UB", [&] { return MPI_Send(s, 4, MPI_INT, peer, tagUb + 1, w); }, tagErr});
  std::string kinds = std::string(t::name(sk)) + "->" + t::name(rk);
  // MPI_Iprobe's flag is one neither MPI checks (Open MPI crashes); cgdr does.
  if (cgdr)
    cases.push_back({"Iprobe null flag", [&] { return MPI_Iprobe(peer, 5, w, nullptr, &st); }, argErr,
                     "cgdr: invalid argument"});
  refuseAll(cases, kinds.c_str());
  sink.check(("bad calls " + kinds).c_str());
  MPI_Barrier(w);  // no rank's next message may meet the other's receive for any tag

  // A matched receive refused keeps its message: the right receive then gets it whole.
  const std::size_t mbytes = n * sizeof(int) - 5;
  MPI_Request sent = MPI_REQUEST_NULL;
  T_MPI(MPI_Isend(s, static_cast<int>(mbytes), MPI_BYTE, peer, 90, w, &sent));
  T_MPI(MPI_Mprobe(peer, 90, w, &m, &st));
  MPI_Datatype looseBytes;  // never committed
  MPI_Type_contiguous(3, MPI_BYTE, &looseBytes);
  std::vector<Case> matched = {
      {"Mrecv count -1", [&] { return MPI_Mrecv(r, -1, MPI_BYTE, &m, &st); }, countErr},
      {"Mrecv uncommitted type", [&] { return MPI_Mrecv(r, 1, looseBytes, &m, &st); }, typeErr},
      {"Mrecv null buffer", [&] { return MPI_Mrecv(nullptr, 8, MPI_BYTE, &m, &st); }, bufErr},
  };
  // Open MPI does not check Imrecv's request pointer (it crashes); cgdr does, for its messages.
  if (cgdr)
    matched.push_back(
        {"Imrecv null request", [&] { return MPI_Imrecv(r, n * sizeof(int), MPI_BYTE, &m, nullptr); }, reqErr});
  refuseAll(matched, kinds.c_str());
  MPI_Type_free(&looseBytes);
  T_CHECK(m != MPI_MESSAGE_NULL, "a refused matched receive consumed the message (%s)", kinds.c_str());
  if (m != MPI_MESSAGE_NULL) {
    T_MPI(MPI_Mrecv(r, n * sizeof(int), MPI_BYTE, &m, &st));
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    T_CHECK(got == static_cast<int>(mbytes), "matched receive after the refused ones got %d bytes", got);
    rb.expect(t::seedOf(peer, msg), mbytes, "matched receive after the refused ones");
  }
  T_MPI(MPI_Wait(&sent, MPI_STATUS_IGNORE));
  rb.poison();
  MPI_Type_free(&loose);

  // MPI_COMM_WORLD freed on one rank of each pair only: the MPI refuses it, and cgdr must keep
  // serving that rank's world traffic as its peer's (a rank that dropped the world's table would
  // send through the real MPI while its peer's messages came through cgdr: neither would arrive).
  if (t::rank() % 2 == 0) {
    MPI_Comm world = w;
    int rc = MPI_Comm_free(&world);
    T_CHECK(rc != MPI_SUCCESS && t::errorClass(rc) == MPI_ERR_COMM && world == MPI_COMM_WORLD,
            "Comm_free of MPI_COMM_WORLD (%s): returned %d, class %d", kinds.c_str(), rc,
            rc == MPI_SUCCESS ? 0 : t::errorClass(rc));
  }

  // Still in step: one message each way, every byte checked, its tag the one sent (given 60 s,
  // so that messages which never meet fail the test rather than hang it).
  const std::size_t bytes = n * sizeof(int) - 3;
  MPI_Request xr[2];
  T_MPI(MPI_Irecv(r, n * sizeof(int), MPI_BYTE, peer, MPI_ANY_TAG, w, &xr[0]));
  T_MPI(MPI_Isend(s, static_cast<int>(bytes), MPI_BYTE, peer, 70 + msg % 100, w, &xr[1]));
  MPI_Status xs[2];
  int done = 0;
  for (double end = MPI_Wtime() + 60; !done && MPI_Wtime() < end;) T_MPI(MPI_Testall(2, xr, &done, xs));
  T_CHECK(done, "the exchange after the bad calls (%s) did not complete in 60 s", kinds.c_str());
  if (!done) return;  // the test has failed; the ranks are out of step
  st = xs[0];
  int got = -1;
  MPI_Get_count(&st, MPI_BYTE, &got);
  T_CHECK(got == static_cast<int>(bytes) && st.MPI_TAG == 70 + msg % 100 && st.MPI_SOURCE == peer,
          "after the bad calls (%s): got %d bytes, tag %d, source %d", kinds.c_str(), got, st.MPI_TAG, st.MPI_SOURCE);
  rb.expect(t::seedOf(peer, msg), bytes, "exchange after the bad calls");
}

// On an intercommunicator a peer is a rank of the remote group. Rank 0 alone against all the
// others, so (from three ranks) the two groups differ in size: a peer at the remote group's size is
// refused once and nothing moves; every remote rank, also those at or above the local group's
// size, exchanges byte-exact (cgdr leaves intercommunicators to the real MPI and asks it for the
// remote size). The bad calls and the good exchange share a tag and differ in size, so a message
// a refused call let out would be the one received, and seen.
void interRanks(t::Kind sk, t::Kind rk, int msg) {
  const int me = t::rank();
  const int color = me == 0 ? 0 : 1;
  MPI_Comm local = MPI_COMM_NULL, inter = MPI_COMM_NULL;
  T_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, me, &local));
  T_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, color == 0 ? 1 : 0, 21, &inter));
  MPI_Errhandler counting;
  MPI_Comm_get_errhandler(MPI_COMM_WORLD, &counting);
  MPI_Comm_set_errhandler(inter, counting);
  MPI_Errhandler_free(&counting);
  int remote = 0, size = 0;
  MPI_Comm_remote_size(inter, &remote);
  MPI_Comm_size(inter, &size);
  const std::size_t n = 64, bad = 16, good = 61;
  t::Buf sb(sk, n), rb(rk, n);
  sb.fill(t::seedOf(me, msg, 7));
  rb.poison();
  const std::string kinds = std::string(t::name(sk)) + "->" + t::name(rk);
  MPI_Request q = MPI_REQUEST_NULL;
  MPI_Status st;
  const std::vector<int> rankErr{MPI_ERR_RANK};
  std::vector<Case> cases = {
      {"intercommunicator: Sendrecv to the remote size",
       [&] { return MPI_Sendrecv(sb.ptr(), bad, MPI_BYTE, remote, 5, rb.ptr(), bad, MPI_BYTE, 0, 5, inter, &st); },
       rankErr},
      {"intercommunicator: Sendrecv from the remote size",
       [&] { return MPI_Sendrecv(sb.ptr(), bad, MPI_BYTE, 0, 5, rb.ptr(), bad, MPI_BYTE, remote, 5, inter, &st); },
       rankErr},
      {"intercommunicator: Isend to the remote size",
       [&] { int rc = MPI_Isend(sb.ptr(), bad, MPI_BYTE, remote, 5, inter, &q); freeIfMade(&q, "Isend"); return rc; },
       rankErr},
      {"intercommunicator: Irecv from the remote size",
       [&] { int rc = MPI_Irecv(rb.ptr(), bad, MPI_BYTE, remote, 5, inter, &q); freeIfMade(&q, "Irecv"); return rc; },
       rankErr},
  };
  refuseAll(cases, kinds.c_str(), inter);  // not MPI_COMM_WORLD's, which counts as well
  rb.untouchedPast(0, ("intercommunicator: the receive buffer after the refused calls " + kinds).c_str());
  // Rank 0 with each remote rank in turn; every other rank with remote rank 0 (world rank 0).
  for (int i = 0; i < (color == 0 ? remote : 1); ++i) {
    int got = -1;
    {
      // A rank refused here leaves its partner waiting: fail in a minute, naming the exchange.
      t::Deadline d(60, "intercommunicator (" + kinds + "): the exchange with remote rank " + std::to_string(i));
      T_MPI(MPI_Sendrecv(sb.ptr(), good, MPI_BYTE, i, 5, rb.ptr(), n, MPI_BYTE, i, 5, inter, &st));
    }
    MPI_Get_count(&st, MPI_BYTE, &got);
    const int from = color == 0 ? i + 1 : 0;  // the world rank of remote rank i
    T_CHECK(got == static_cast<int>(good), "intercommunicator (%s): %d bytes from remote rank %d (local size %d)",
            kinds.c_str(), got, i, size);
    rb.expect(t::seedOf(from, msg, 7), good, ("intercommunicator: exchange with remote rank " + std::to_string(i) +
                                              " " + kinds).c_str());
    rb.poison();
  }
  MPI_Comm_free(&inter);
  MPI_Comm_free(&local);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_args");
  MPI_Errhandler counting = t::countingErrhandler();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, counting);
  MPI_Errhandler_free(&counting);
  const char* pre = std::getenv("CGDRTEST_PRELOADED");
  const bool cgdr = pre && std::strcmp(pre, "1") == 0;
  int msg = 0;
  if (t::size() % 2 == 0)
    for (auto [sk, rk] : pairs) badCalls(sk, rk, ++msg, cgdr);
  for (auto [sk, rk] : pairs) interRanks(sk, rk, ++msg);
  return t::finish("p2p_args");
}
