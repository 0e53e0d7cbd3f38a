// Every send mode and receive call, blocking and not, for every message size and every pair of
// buffer kinds: byte-exact data, status source/tag/count, and untouched bytes past the message.
#include <cstdlib>
#include <vector>

#include "testlib.hpp"

namespace {

constexpr std::size_t kSlack = 16;  // receive buffers are larger: count and poison are checked

enum class Variant { kSendRecv, kIsendIrecv, kSsend, kRsend, kBsend, kIbsend, kIssend, kIrsend, kTestLoop };
const char* variantName(Variant v) {
  static const char* names[] = {"Send/Recv", "Isend/Irecv", "Ssend/Recv", "Rsend", "Bsend",
                                "Ibsend", "Issend", "Irsend", "Send/Irecv+Test"};
  return names[static_cast<int>(v)];
}

void sendOne(Variant v, const t::Buf& b, std::size_t n, int peer, int tag) {
  MPI_Request r = MPI_REQUEST_NULL;
  int c = static_cast<int>(n);
  switch (v) {
    case Variant::kSendRecv:
    case Variant::kTestLoop: T_MPI(MPI_Send(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD)); break;
    case Variant::kIsendIrecv: T_MPI(MPI_Isend(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r)); break;
    case Variant::kSsend: T_MPI(MPI_Ssend(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD)); break;
    case Variant::kRsend: T_MPI(MPI_Rsend(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD)); break;
    case Variant::kBsend: T_MPI(MPI_Bsend(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD)); break;
    case Variant::kIbsend: T_MPI(MPI_Ibsend(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r)); break;
    case Variant::kIssend: T_MPI(MPI_Issend(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r)); break;
    case Variant::kIrsend: T_MPI(MPI_Irsend(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r)); break;
  }
  if (r != MPI_REQUEST_NULL) {
    MPI_Status st;
    T_MPI(MPI_Wait(&r, &st));
    T_CHECK(r == MPI_REQUEST_NULL, "request not freed by MPI_Wait");
  }
}

void recvOne(Variant v, t::Buf& b, int peer, int tag, MPI_Status* st) {
  int c = static_cast<int>(b.size());
  if (v == Variant::kSendRecv || v == Variant::kSsend || v == Variant::kBsend) {
    T_MPI(MPI_Recv(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, st));
    return;
  }
  MPI_Request r;
  T_MPI(MPI_Irecv(b.ptr(), c, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &r));
  if (v == Variant::kRsend || v == Variant::kIrsend) {
    // Ready mode: tell the sender the receive is posted.
    T_MPI(MPI_Send(nullptr, 0, MPI_BYTE, peer, 999, MPI_COMM_WORLD));
  }
  if (v == Variant::kTestLoop) {
    int flag = 0;
    while (!flag) T_MPI(MPI_Test(&r, &flag, st));
  } else {
    T_MPI(MPI_Wait(&r, st));
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_basic");
  t::needGpus(std::stoi(t::arg(argc, argv, "--min-gpus", "0")), "p2p_basic");
  const int me = t::rank();
  const int peer = me ^ 1;
  const bool active = peer < t::size();
  auto sizes = t::sizes(argc, argv);
  // --buffered no: without MPI_Bsend/Ibsend, whose data goes out as a host message (checking
  // which channels carried the device messages of each size).
  const bool buffered = t::arg(argc, argv, "--buffered", "yes") != "no";
  std::size_t maxSize = 0;
  for (auto s : sizes) maxSize = std::max(maxSize, s);
  std::vector<char> attach(maxSize + 2 * MPI_BSEND_OVERHEAD + 64);
  MPI_Buffer_attach(attach.data(), static_cast<int>(attach.size()));

  int msg = 0;
  for (auto [sk, rk] : pairs) {
    for (std::size_t n : sizes) {
      t::Buf sbuf(sk, n);
      t::Buf rbuf(rk, n + kSlack);
      for (int vi = 0; vi <= static_cast<int>(Variant::kTestLoop); ++vi) {
        Variant v = static_cast<Variant>(vi);
        ++msg;
        if (!active || (!buffered && (v == Variant::kBsend || v == Variant::kIbsend))) continue;
        // Both directions: the even rank sends first, then the odd one.
        for (int dir = 0; dir < 2; ++dir) {
          bool sender = (me % 2) == dir;
          int tag = msg % 32000;
          if (sender) {
            sbuf.fill(t::seedOf(me, msg, dir));
            if (v == Variant::kRsend || v == Variant::kIrsend)
              T_MPI(MPI_Recv(nullptr, 0, MPI_BYTE, peer, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            sendOne(v, sbuf, n, peer, tag);
          } else {
            rbuf.poison();
            MPI_Status st;
            recvOne(v, rbuf, peer, tag, &st);
            int count = -1;
            MPI_Get_count(&st, MPI_BYTE, &count);
            T_CHECK(count == static_cast<int>(n), "%s %s->%s n=%zu: count %d", variantName(v),
                    t::name(sk), t::name(rk), n, count);
            T_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == tag, "%s: status source %d tag %d",
                    variantName(v), st.MPI_SOURCE, st.MPI_TAG);
            char what[96];
            snprintf(what, sizeof what, "%s %s->%s n=%zu", variantName(v), t::name(sk), t::name(rk), n);
            rbuf.expect(t::seedOf(peer, msg, dir), n, what);
          }
        }
      }
    }
  }
  void* detached;
  int dsize;
  MPI_Buffer_detach(&detached, &dsize);
  return t::finish("p2p_basic");
}
