// OSU-style collective benchmarks: average latency over iterations (min/max over ranks with -f),
// and for the non-blocking ones OSU's overlap figure (pure communication vs. overlapped compute).
// Reductions use MPI_FLOAT with small integer values (exact in any order), the rest MPI_CHAR.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

#include "bench.hpp"

namespace bench {
namespace {

struct Ctx {
  int me = 0, np = 1;
  Buffer *s, *r;
  std::size_t size;
  int count() const { return static_cast<int>(size); }
  int fcount() const { return static_cast<int>(size / sizeof(float)); }
};

using Start = std::function<void(Ctx&, MPI_Request*)>;  // request == nullptr: blocking call

struct Coll {
  const char* name;
  bool reduce;        // float data
  bool perRankRecv;   // receive buffer holds np blocks
  bool perRankSend;   // send buffer holds np blocks
  Start run;
};

void call(int rc) { (void)rc; }

std::vector<Coll> table() {
  return {
      {"allreduce", true, false, false,
       [](Ctx& c, MPI_Request* q) {
         q ? call(MPI_Iallreduce(c.s->data(), c.r->data(), c.fcount(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, q))
           : call(MPI_Allreduce(c.s->data(), c.r->data(), c.fcount(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
       }},
      {"reduce", true, false, false,
       [](Ctx& c, MPI_Request* q) {
         q ? call(MPI_Ireduce(c.s->data(), c.r->data(), c.fcount(), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD, q))
           : call(MPI_Reduce(c.s->data(), c.r->data(), c.fcount(), MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD));
       }},
      {"reduce_scatter", true, false, true,
       [](Ctx& c, MPI_Request* q) {
         std::vector<int> counts(c.np, c.fcount());
         q ? call(MPI_Ireduce_scatter(c.s->data(), c.r->data(), counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, q))
           : call(MPI_Reduce_scatter(c.s->data(), c.r->data(), counts.data(), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
       }},
      {"bcast", false, false, false,
       [](Ctx& c, MPI_Request* q) {
         q ? call(MPI_Ibcast(c.s->data(), c.count(), MPI_CHAR, 0, MPI_COMM_WORLD, q))
           : call(MPI_Bcast(c.s->data(), c.count(), MPI_CHAR, 0, MPI_COMM_WORLD));
       }},
      {"allgather", false, true, false,
       [](Ctx& c, MPI_Request* q) {
         q ? call(MPI_Iallgather(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, MPI_COMM_WORLD, q))
           : call(MPI_Allgather(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, MPI_COMM_WORLD));
       }},
      {"alltoall", false, true, true,
       [](Ctx& c, MPI_Request* q) {
         q ? call(MPI_Ialltoall(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, MPI_COMM_WORLD, q))
           : call(MPI_Alltoall(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, MPI_COMM_WORLD));
       }},
      {"gather", false, true, false,
       [](Ctx& c, MPI_Request* q) {
         q ? call(MPI_Igather(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, 0, MPI_COMM_WORLD, q))
           : call(MPI_Gather(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, 0, MPI_COMM_WORLD));
       }},
      {"scatter", false, false, true,
       [](Ctx& c, MPI_Request* q) {
         q ? call(MPI_Iscatter(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, 0, MPI_COMM_WORLD, q))
           : call(MPI_Scatter(c.s->data(), c.count(), MPI_CHAR, c.r->data(), c.count(), MPI_CHAR, 0, MPI_COMM_WORLD));
       }},
  };
}

const Coll* find(const std::string& test, bool* nonblocking) {
  static const std::vector<Coll> t = table();
  std::string name = test;
  *nonblocking = !name.empty() && name[0] == 'i' && name != "i";
  if (*nonblocking) name = name.substr(1);
  for (const Coll& c : t)
    if (name == c.name) return &c;
  return nullptr;
}

// Busy work of about `us` microseconds (OSU's dummy compute).
void compute(double us) {
  double t0 = MPI_Wtime();
  while ((MPI_Wtime() - t0) * 1e6 < us) {
  }
}

double timeLoop(const Coll& c, Ctx& ctx, int iters, int skip, bool nb, double computeUs) {
  double total = 0;
  for (int i = 0; i < iters + skip; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (nb) {
      MPI_Request q;
      c.run(ctx, &q);
      if (computeUs > 0) compute(computeUs);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
      c.run(ctx, nullptr);
    }
    if (i >= skip) total += MPI_Wtime() - t0;
  }
  return total * 1e6 / iters;
}

// Validation: float reductions of small integers; byte patterns for data movement.
bool validate(const Coll& c, Ctx& ctx) {
  std::size_t sbytes = c.perRankSend ? ctx.size * ctx.np : ctx.size;
  std::size_t rbytes = c.perRankRecv ? ctx.size * ctx.np : ctx.size;
  if (c.reduce) {
    std::vector<float> v(sbytes / sizeof(float));
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i % 7) + ctx.me);
    ctx.s->upload(v.data(), v.size() * sizeof(float));
  } else {
    ctx.s->fillPattern(100u + ctx.me, sbytes);
  }
  ctx.r->fill(0, rbytes);
  c.run(ctx, nullptr);
  bool ok = true;
  int n = ctx.np;
  if (c.reduce) {
    bool rooted = std::strcmp(c.name, "reduce") == 0;
    if (!rooted || ctx.me == 0) {
      std::size_t cnt = ctx.size / sizeof(float);
      std::vector<float> got(cnt);
      ctx.r->download(got.data(), cnt * sizeof(float));
      std::size_t base = std::strcmp(c.name, "reduce_scatter") == 0 ? cnt * ctx.me : 0;
      for (std::size_t i = 0; i < cnt && ok; ++i)
        ok = got[i] == static_cast<float>(((base + i) % 7) * n + n * (n - 1) / 2);
    }
  } else if (std::strcmp(c.name, "bcast") == 0) {
    ok = ctx.me == 0 || ctx.s->checkPattern(100u, ctx.size);
  } else if (std::strcmp(c.name, "scatter") == 0) {
    std::vector<unsigned char> got(ctx.size), all(ctx.size * n);
    Buffer ref(Loc::kHost, ctx.size * n);
    ref.fillPattern(100u, ctx.size * n);
    ref.download(all.data(), all.size());
    ctx.r->download(got.data(), ctx.size);
    ok = std::memcmp(got.data(), all.data() + ctx.size * ctx.me, ctx.size) == 0;
  } else if (std::strcmp(c.name, "gather") != 0 || ctx.me == 0) {
    std::vector<unsigned char> got(rbytes);
    ctx.r->download(got.data(), rbytes);
    for (int q = 0; q < n && ok; ++q) {
      Buffer ref(Loc::kHost, ctx.size * n);
      ref.fillPattern(100u + q, c.perRankSend ? ctx.size * n : ctx.size);
      std::vector<unsigned char> want(ctx.size * n);
      ref.download(want.data(), ctx.size * n);
      std::size_t from = c.perRankSend ? ctx.size * ctx.me : 0;
      ok = std::memcmp(got.data() + ctx.size * q, want.data() + from, ctx.size) == 0;
    }
  }
  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all == 1;
}

}  // namespace

bool isCollective(const std::string& test) {
  bool nb = false;
  return find(test, &nb) != nullptr;
}

int runCollective(const Options& opts) {
  bool nb = false;
  const Coll* c = find(opts.test, &nb);
  Options o = opts;
  o.datatype = c->reduce ? "MPI_FLOAT" : "MPI_CHAR";
  Ctx ctx;
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.me);
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.np);
  std::size_t blocks = static_cast<std::size_t>(ctx.np);
  Buffer s(o.send, o.maxSize * (c->perRankSend ? blocks : 1)), r(o.send, o.maxSize * (c->perRankRecv ? blocks : 1));
  ctx.s = &s;
  ctx.r = &r;
  Report rep;
  rep.title = std::string(nb ? "Non-blocking " : "") + c->name + " Latency Test";
  rep.unit = nb ? "Overlap" : "Latency";
  if (ctx.me == 0) printHeader(o, rep, true);
  bool allValid = true;
  for (std::size_t size : sizes(o)) {
    if (size == 0 || (c->reduce && size < sizeof(float))) continue;
    ctx.size = size;
    int iters = itersFor(o, size), skip = warmupFor(o, size);
    Row row{size, 0};
    double mine = timeLoop(*c, ctx, iters, skip, nb, 0);
    double overall = 0, comp = 0;
    if (nb) {
      overall = timeLoop(*c, ctx, iters, skip, nb, mine);
      double t0 = MPI_Wtime();
      for (int i = 0; i < iters; ++i) compute(mine);
      comp = (MPI_Wtime() - t0) * 1e6 / iters;
    }
    double vals[3] = {mine, overall, comp}, sums[3], mn, mx;
    MPI_Reduce(vals, sums, 3, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &mn, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (o.validate) {
      row.valid = validate(*c, ctx);
      allValid = allValid && row.valid;
    }
    if (ctx.me == 0) {
      if (nb) {
        double pure = sums[0] / ctx.np;
        row.value = sums[1] / ctx.np;
        row.min = sums[2] / ctx.np;
        row.max = pure;
        row.extra = std::clamp(100.0 - 100.0 * (row.value - row.min) / pure, 0.0, 100.0);
      } else {
        row.value = sums[0] / ctx.np;
        row.min = mn;
        row.max = mx;
      }
      printRow(o, row, true);
      rep.rows.push_back(row);
    }
  }
  if (ctx.me == 0) writeJson(o, rep);
  return allValid ? 0 : 1;
}

}  // namespace bench
