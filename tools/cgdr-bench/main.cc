// cgdr-bench command line: cgdr-bench TEST [S R] [options]; see usage().
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench.hpp"
#include "user_side.hpp"

namespace {

void usage() {
  std::puts(
      "usage: cgdr-bench TEST [S R] [options]\n"
      "  TEST     latency | bw | bibw                      (point-to-point, ranks 0 and 1)\n"
      "           allreduce | reduce | reduce_scatter | bcast | allgather | alltoall | gather |\n"
      "           scatter, and i<name> for the non-blocking form (overlap as OSU reports it)\n"
      "           alloc D|A: us per cudaMalloc+cudaFree / cudaMallocAsync+cudaFreeAsync pair\n"
      "           (-W allocations live at once, default 16; every rank, rank 0 reports)\n"
      "  S R      buffer location of the sender / receiver: H (host), D (device, cudaMalloc),\n"
      "           M (managed), V (device memory from cuMemCreate, exportable: shared without a copy),\n"
      "           A (cudaMallocAsync, the device's default pool; preloaded cgdr may serve it from its\n"
      "           exportable heap, CGDR_CUDA_MALLOC_ASYNC)\n"
      "  -m [MIN:]MAX     message sizes in bytes (default 0:4194304; collectives 1:1048576)\n"
      "  -d cuda|managed|host  buffer location for collectives (or for both sides)\n"
      "  -i N[:L]         iterations (small[:large messages]; default 10000:1000, bw/bibw 100:20, as OSU)\n"
      "  -x N[:L]         warm-up iterations (default 100:10, bw/bibw 10:2)\n"
      "  -W N             window size for bw/bibw (default 64)\n"
      "  -B N             point-to-point: N buffers per side, each message the next one (default 1;\n"
      "                   as a program with many live buffers, e.g. PyTorch's cached blocks)\n"
      "  -c               validate the data of each size\n"
      "  -f               collectives: also min/max latency over ranks and iterations\n"
      "  --json FILE      also write the results as JSON (- for stdout)\n"
      "  --gpu N          GPU ordinal (default: local rank modulo GPU count)\n"
      "  --nccl LIB       latency/bw/bibw through NCCL (ncclSend/ncclRecv, loaded from LIB, e.g.\n"
      "                   libnccl.so.2 or a path) instead of MPI, for comparison; device or managed\n"
      "                   buffers, exactly 2 ranks; MPI only starts the ranks and passes NCCL its id\n"
      "  --nccl-blocking  with --nccl: synchronize the stream after every NCCL call (each message\n"
      "                   done before the next call, as a blocking MPI call; default: queued, NCCL's best)\n"
      "Preload cgdr to measure it: cgdr-run cgdr-bench ... or LD_PRELOAD=libcgdr.so.");
}

void parsePair(const char* s, int* a, int* b) {
  const char* colon = std::strchr(s, ':');
  *a = std::atoi(s);
  if (colon) *b = std::atoi(colon + 1);
}

bool parse(int argc, char** argv, bench::Options& o) {
  int positional = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cgdr-bench: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-h" || a == "--help") return false;
    if (a == "-m") {
      o.sizesGiven = true;
      const char* v = next();
      const char* colon = std::strchr(v, ':');
      if (colon) {
        o.minSize = cgdr::user::parseSize(v);
        o.maxSize = cgdr::user::parseSize(colon + 1);
      } else {
        o.maxSize = cgdr::user::parseSize(v);
      }
    } else if (a == "-i") {
      parsePair(next(), &o.iters, &o.itersLarge);
    } else if (a == "-x") {
      parsePair(next(), &o.warmup, &o.warmupLarge);
    } else if (a == "-W") {
      o.window = std::atoi(next());
      o.windowGiven = true;
    } else if (a == "-B") {
      o.buffers = std::atoi(next());
      if (o.buffers < 1) {
        std::fprintf(stderr, "cgdr-bench: -B needs a count of at least 1\n");
        std::exit(2);
      }
    } else if (a == "-f") {
      o.full = true;
    } else if (a == "-c") {
      o.validate = true;
    } else if (a == "--json") {
      o.json = next();
    } else if (a == "--nccl") {
      o.nccl = next();
    } else if (a == "--nccl-blocking") {
      o.ncclBlocking = true;
    } else if (a == "--gpu") {
      o.gpu = std::atoi(next());
    } else if (a == "-d") {
      o.send = o.recv = bench::parseLoc(next());
    } else if (!a.empty() && a[0] != '-') {
      if (positional == 0) o.test = a;
      else if (positional == 1) o.send = bench::parseLoc(a);
      else if (positional == 2) o.recv = bench::parseLoc(a);
      ++positional;
    } else {
      std::fprintf(stderr, "cgdr-bench: unknown option %s\n", a.c_str());
      return false;
    }
  }
  return !o.test.empty();
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  bench::Options o;
  if (!parse(argc, argv, o)) {
    if (me == 0) usage();
    MPI_Finalize();
    return 2;
  }
  bool p2p = o.test == "latency" || o.test == "bw" || o.test == "bibw";
  if (o.ncclBlocking && o.nccl.empty()) {
    if (me == 0) std::fprintf(stderr, "cgdr-bench --nccl-blocking: needs --nccl LIB\n");
    MPI_Finalize();
    return 2;
  }
  if (!o.nccl.empty()) {  // checked before the GPU: a bad request fails alike on every machine
    std::string why;
    if (!p2p) why = "only latency, bw and bibw run through NCCL, not '" + o.test + "'";
    else if (o.send == bench::Loc::kHost || o.recv == bench::Loc::kHost)
      why = "NCCL moves GPU memory only: give D, M, V or A buffers on both sides";
    else why = bench::loadNccl(o.nccl);
    if (!why.empty()) {
      if (me == 0) std::fprintf(stderr, "cgdr-bench --nccl: %s\n", why.c_str());
      MPI_Finalize();
      return 2;
    }
  }
  bool gpu = o.send != bench::Loc::kHost || o.recv != bench::Loc::kHost;
  if (gpu && !cgdr::user::gpuPresent()) {
    if (me == 0) std::fprintf(stderr, "cgdr-bench: %s buffers need a GPU; none is usable here\n", bench::locName(o.send));
    MPI_Finalize();
    return 77;
  }
  bench::selectGpu(o);
  int rc = 2;
  if (p2p && !o.nccl.empty()) {
    rc = bench::runNccl(o);
  } else if (p2p) {
    rc = bench::runPt2pt(o);
  } else if (o.test == "alloc") {
    if (!o.sizesGiven) o.minSize = 1, o.maxSize = 64u << 20;
    rc = bench::runAlloc(o);
  } else if (bench::isCollective(o.test)) {
    if (o.minSize == 0 && !o.sizesGiven) o.minSize = 1;
    if (!o.sizesGiven) o.maxSize = 1 << 20;
    rc = bench::runCollective(o);
  } else if (me == 0) {
    std::fprintf(stderr, "cgdr-bench: unknown test '%s'\n", o.test.c_str());
    usage();
  }
  MPI_Finalize();
  return rc;
}
