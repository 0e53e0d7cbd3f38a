// The workload tracer fed by real calls: rank 0 sends to rank 1 in four phases, each of many small
// host messages with one call style on both sides (blocking MPI_Send / MPI_Recv, or MPI_Isend /
// MPI_Irecv in windows of 16), each ended by one large message in a size class of its own (2, 4, 8 and
// 16 MiB and a few bytes) sent and received in the phase's style, from and into buffers of the kinds
// asked (--kinds XY; host by default; the tracer counts calls whatever their buffers). The receiver
// picks that message's channel by its pattern for the sender (trace_phases.sh reads which one from
// CGDR_STATS). Every byte of every message is checked.
//   trace_phases [--kinds HH] [--phases B:100,N:2000,B:600,N:600]
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "testlib.hpp"

namespace {

constexpr int kTag = 21;
constexpr int kWindow = 16;

std::size_t smallSize(int msg) { return msg % 50 == 0 ? 0 : 1 + static_cast<std::size_t>(msg) * 37 % 200; }

struct Phase {
  bool blocking;
  int count;
};

std::vector<Phase> parsePhases(const std::string& text) {
  std::vector<Phase> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.size() < 3 || (item[0] != 'B' && item[0] != 'N') || item[1] != ':') {
      std::fprintf(stderr, "trace_phases: bad phase '%s' (B:COUNT or N:COUNT)\n", item.c_str());
      std::exit(2);
    }
    out.push_back({item[0] == 'B', std::atoi(item.c_str() + 2)});
  }
  return out;
}

// Sends (rank 0, from buffers of kind sk) or receives (rank 1, into kind rk) messages first..first+n-1
// of sizes size(msg), blocking or in windows of non-blocking calls; the receiver checks each.
template <class Size>
void transfer(bool blocking, int first, int n, Size size, t::Kind sk = t::Kind::H, t::Kind rk = t::Kind::H) {
  const bool sender = t::rank() == 0;
  for (int at = 0; at < n;) {
    int batch = blocking ? 1 : std::min(kWindow, n - at);
    std::vector<std::unique_ptr<t::Buf>> bufs;
    std::vector<MPI_Request> reqs(static_cast<std::size_t>(batch), MPI_REQUEST_NULL);
    for (int i = 0; i < batch; ++i) {
      int msg = first + at + i;
      std::size_t bytes = size(msg);
      bufs.push_back(std::make_unique<t::Buf>(sender ? sk : rk, bytes + 16));  // room to see an overrun
      t::Buf& b = *bufs.back();
      if (sender) {
        b.fill(t::seedOf(0, msg));
        if (blocking) T_MPI(MPI_Send(b.ptr(), static_cast<int>(bytes), MPI_BYTE, 1, kTag, MPI_COMM_WORLD));
        else T_MPI(MPI_Isend(b.ptr(), static_cast<int>(bytes), MPI_BYTE, 1, kTag, MPI_COMM_WORLD, &reqs[i]));
      } else {
        b.poison();
        if (blocking)
          T_MPI(MPI_Recv(b.ptr(), static_cast<int>(bytes), MPI_BYTE, 0, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        else T_MPI(MPI_Irecv(b.ptr(), static_cast<int>(bytes), MPI_BYTE, 0, kTag, MPI_COMM_WORLD, &reqs[i]));
      }
    }
    if (!blocking) T_MPI(MPI_Waitall(batch, reqs.data(), MPI_STATUSES_IGNORE));
    if (!sender)
      for (int i = 0; i < batch; ++i) {
        int msg = first + at + i;
        char what[96];
        std::snprintf(what, sizeof what, "message %d (%zu bytes, %s)", msg, size(msg),
                      blocking ? "blocking" : "non-blocking");
        bufs[i]->expect(t::seedOf(0, msg), size(msg), what);
      }
    at += batch;
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  if (pairs.size() != 1) {
    std::fprintf(stderr, "trace_phases: --kinds names one pair (XY)\n");
    MPI_Finalize();
    return 2;
  }
  t::setup(pairs, "trace_phases");
  auto phases = parsePhases(t::arg(argc, argv, "--phases", "B:100,N:2000,B:600,N:600"));
  if (t::size() != 2) {
    if (t::rank() == 0) std::printf("FAIL trace_phases: needs exactly 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  int msg = 0;
  std::size_t large = 2u << 20;
  for (std::size_t p = 0; p < phases.size(); ++p, large *= 2) {
    const Phase& ph = phases[p];
    transfer(ph.blocking, msg, ph.count, smallSize);
    msg += ph.count;
    const std::size_t big = large + 2 * p + 3;  // odd, in the class [large, 2 large)
    transfer(ph.blocking, msg, 1, [big](int) { return big; }, pairs[0].first, pairs[0].second);
    ++msg;
    if (t::rank() == 0)
      std::printf("phase %zu: %d %s messages, then %zu bytes %s->%s\n", p + 1, ph.count,
                  ph.blocking ? "blocking" : "non-blocking", big, t::name(pairs[0].first),
                  t::name(pairs[0].second));
  }
  return t::finish("trace_phases");
}
