// OSU-style point-to-point benchmarks: latency (ping-pong), bw (windowed uni-directional) and
// bibw (windowed bi-directional), between ranks 0 and 1.
#include <cstdio>
#include <vector>

#include "bench.hpp"

namespace bench {
namespace {

double latency(const Options& o, const Buffers& s, const Buffers& r, std::size_t size, int me) {
  int iters = itersFor(o, size), skip = warmupFor(o, size);
  int n = static_cast<int>(size);
  double t0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < iters + skip; ++i) {
    if (i == skip) t0 = MPI_Wtime();
    if (me == 0) {
      MPI_Send(s[i], n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
      MPI_Recv(r[i], n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (me == 1) {
      MPI_Recv(r[i], n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(s[i], n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
  }
  return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

double bandwidth(const Options& o, const Buffers& s, const Buffers& r, std::size_t size, int me, bool bidir) {
  int iters = itersFor(o, size), skip = warmupFor(o, size);
  int n = static_cast<int>(size), w = o.window;
  std::vector<MPI_Request> reqs(2 * w);
  char ack[4];
  double t0 = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; i < iters + skip; ++i) {
    if (i == skip) t0 = MPI_Wtime();
    if (me > 1) continue;
    int peer = 1 - me;
    int k = 0;
    if (bidir || me == 1)
      for (int j = 0; j < w; ++j) MPI_Irecv(r[j], n, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[k++]);
    if (bidir || me == 0)
      for (int j = 0; j < w; ++j) MPI_Isend(s[j], n, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &reqs[k++]);
    MPI_Waitall(k, reqs.data(), MPI_STATUSES_IGNORE);
    if (!bidir) {
      if (me == 0) MPI_Recv(ack, 4, MPI_CHAR, 1, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      else MPI_Send(ack, 4, MPI_CHAR, 0, 101, MPI_COMM_WORLD);
    }
  }
  double t = MPI_Wtime() - t0;
  double bytes = static_cast<double>(size) * iters * w * (bidir ? 2 : 1);
  return t > 0 ? bytes / 1e6 / t : 0;
}

// One exchange with patterns checked on the receiving side (OSU's -c), in the size's buffers.
bool validate(const Buffers& ss, const Buffers& rs, std::size_t size, int me) {
  Buffer& s = *ss.all[size % ss.all.size()];
  Buffer& r = *rs.all[size % rs.all.size()];
  int n = static_cast<int>(size);
  int ok = 1;
  if (me == 0) {
    s.fillPattern(1234u + static_cast<unsigned>(size), size);
    MPI_Send(s.data(), n, MPI_CHAR, 1, 7, MPI_COMM_WORLD);
  } else if (me == 1) {
    r.fill(0, size);
    MPI_Recv(r.data(), n, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    ok = r.checkPattern(1234u + static_cast<unsigned>(size), size) ? 1 : 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 1, MPI_COMM_WORLD);
  return ok != 0;
}

}  // namespace

int runPt2pt(const Options& o) {
  int me = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np < 2) {
    if (me == 0) std::fprintf(stderr, "cgdr-bench %s needs at least 2 ranks\n", o.test.c_str());
    return 2;
  }
  // Rank 0 sends from `send` and receives into `recv`; rank 1 the same, as OSU does.
  Buffers s(o.send, o.maxSize, o.buffers), r(o.recv, o.maxSize, o.buffers);
  Report rep = p2pReport(o.test);
  if (me == 0) printHeader(o, rep, false);
  for (std::size_t size : sizes(o)) {
    Row row{size, 0};
    row.value = o.test == "latency" ? latency(o, s, r, size, me) : bandwidth(o, s, r, size, me, o.test == "bibw");
    if (o.validate) row.valid = validate(s, r, size, me);
    if (me == 0) {
      printRow(o, row, false);
      rep.rows.push_back(row);
    }
  }
  if (me == 0) writeJson(o, rep);
  for (auto& row : rep.rows)
    if (!row.valid) return 1;
  return 0;
}

}  // namespace bench
