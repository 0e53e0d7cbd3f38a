// cgdr-bench --nccl LIB: the point-to-point tests through NCCL's ncclSend/ncclRecv instead of MPI,
// for a side-by-side with the MPI paths (bench/gpu-compare.sh). MPI only starts the ranks and hands
// NCCL its unique id; every timed byte moves through NCCL. NCCL is loaded with dlopen (no header,
// no link: the machines without it still build and run cgdr-bench), from LIB as dlopen finds it.
//
// What is timed is NCCL at its best: its operations are stream-ordered, so each rank queues a test's
// iterations on one stream and synchronizes once at the end (as nccl-tests does); the round trips of
// a ping-pong still follow one another, since each receive waits for the peer's send. With
// --nccl-blocking every NCCL call is followed by cudaStreamSynchronize instead: what a program sees
// that needs each message done before its next step, as a blocking MPI call guarantees on return.
//   latency  rank 0 send, recv; rank 1 recv, send (the same one-way time as the MPI test reports)
//   bw       a group of W sends (rank 0) / W receives (rank 1), then a 4-byte reply, per iteration
//   bibw     each rank a group of W receives and W sends per iteration
#include <dlfcn.h>

#include <cstdio>
#include <string>

#include "bench.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace bench {
namespace {

// NCCL's C API as its documentation gives it: results and data types are ints (ncclSuccess 0,
// ncclInt8 0), a communicator is a pointer, the unique id 128 opaque bytes passed by value.
struct UniqueId {
  char internal[128];
};
using Comm = void*;
struct Api {
  void* handle = nullptr;
  int (*getVersion)(int*) = nullptr;
  int (*getUniqueId)(UniqueId*) = nullptr;
  int (*commInitRank)(Comm*, int, UniqueId, int) = nullptr;
  int (*commDestroy)(Comm) = nullptr;
  int (*send)(const void*, std::size_t, int, int, Comm, void*) = nullptr;
  int (*recv)(void*, std::size_t, int, int, Comm, void*) = nullptr;
  int (*groupStart)() = nullptr;
  int (*groupEnd)() = nullptr;
  const char* (*errorString)(int) = nullptr;
};
constexpr int kInt8 = 0;

Api gApi;

template <typename F>
bool sym(void* h, const char* name, F* f, std::string* why) {
  *f = reinterpret_cast<F>(dlsym(h, name));
  if (!*f) *why = std::string("no symbol ") + name;
  return *f != nullptr;
}

#if CGDR_HAVE_CUDA
// A failed NCCL or CUDA call ends the job, naming the step.
void check(int rc, const char* what) {
  if (rc == 0) return;
  std::fprintf(stderr, "cgdr-bench --nccl: %s failed: %s\n", what,
               gApi.errorString ? gApi.errorString(rc) : "NCCL error");
  MPI_Abort(MPI_COMM_WORLD, 1);
}

void cuda(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "cgdr-bench --nccl: %s failed: %s\n", what, cudaGetErrorString(e));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

struct Ctx {
  Comm comm = nullptr;
  cudaStream_t stream = nullptr;
  void* ack = nullptr;  // the bw test's reply (device memory: NCCL moves nothing else)
  int me = 0;
};

// Queues `count` iterations of the test from iteration `first` on the stream.
void queue(const Options& o, const Ctx& c, const Buffers& s, const Buffers& r, std::size_t size, int first, int count) {
  int peer = 1 - c.me;
  const Api& a = gApi;
  // --nccl-blocking: each call (a group counts as one) done before the next is made
  auto done = [&] {
    if (o.ncclBlocking) cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
  };
  auto send = [&](const void* b, std::size_t n) {
    check(a.send(b, n, kInt8, peer, c.comm, c.stream), "ncclSend");
    done();
  };
  auto recv = [&](void* b, std::size_t n) {
    check(a.recv(b, n, kInt8, peer, c.comm, c.stream), "ncclRecv");
    done();
  };
  for (int i = first; i < first + count; ++i) {
    if (o.test == "latency") {
      if (c.me == 0) {
        send(s[i], size);
        recv(r[i], size);
      } else {
        recv(r[i], size);
        send(s[i], size);
      }
      continue;
    }
    bool bidir = o.test == "bibw";
    check(a.groupStart(), "ncclGroupStart");
    if (bidir || c.me == 1)
      for (int j = 0; j < o.window; ++j) check(a.recv(r[j], size, kInt8, peer, c.comm, c.stream), "ncclRecv");
    if (bidir || c.me == 0)
      for (int j = 0; j < o.window; ++j) check(a.send(s[j], size, kInt8, peer, c.comm, c.stream), "ncclSend");
    check(a.groupEnd(), "ncclGroupEnd");
    done();
    if (!bidir) {
      if (c.me == 0) recv(c.ack, 4);
      else send(c.ack, 4);
    }
  }
}

double measure(const Options& o, const Ctx& c, const Buffers& s, const Buffers& r, std::size_t size) {
  int iters = itersFor(o, size), skip = warmupFor(o, size);
  queue(o, c, s, r, size, 0, skip);
  cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  queue(o, c, s, r, size, skip, iters);
  cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
  double t = MPI_Wtime() - t0;
  if (o.test == "latency") return t * 1e6 / (2.0 * iters);
  double bytes = static_cast<double>(size) * iters * o.window * (o.test == "bibw" ? 2 : 1);
  return t > 0 ? bytes / 1e6 / t : 0;
}

// One message with a pattern per size, checked where it lands (as the MPI tests' -c).
bool validate(const Ctx& c, const Buffers& ss, const Buffers& rs, std::size_t size) {
  Buffer& s = *ss.all[size % ss.all.size()];
  Buffer& r = *rs.all[size % rs.all.size()];
  int ok = 1;
  unsigned seed = 4321u + static_cast<unsigned>(size);
  if (c.me == 0) {
    s.fillPattern(seed, size);
    check(gApi.send(s.data(), size, kInt8, 1, c.comm, c.stream), "ncclSend");
  } else {
    r.fill(0, size);
    check(gApi.recv(r.data(), size, kInt8, 0, c.comm, c.stream), "ncclRecv");
  }
  cuda(cudaStreamSynchronize(c.stream), "cudaStreamSynchronize");
  if (c.me == 1) ok = r.checkPattern(seed, size) ? 1 : 0;
  MPI_Bcast(&ok, 1, MPI_INT, 1, MPI_COMM_WORLD);
  return ok != 0;
}
#endif

}  // namespace

std::string loadNccl(const std::string& lib) {
  std::string why;
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = dlerror();
    return "cannot load NCCL from '" + lib + "': " + (e ? e : "dlopen failed");
  }
  Api a;
  a.handle = h;
  if (!sym(h, "ncclGetVersion", &a.getVersion, &why) || !sym(h, "ncclGetUniqueId", &a.getUniqueId, &why) ||
      !sym(h, "ncclCommInitRank", &a.commInitRank, &why) || !sym(h, "ncclCommDestroy", &a.commDestroy, &why) ||
      !sym(h, "ncclSend", &a.send, &why) || !sym(h, "ncclRecv", &a.recv, &why) ||
      !sym(h, "ncclGroupStart", &a.groupStart, &why) || !sym(h, "ncclGroupEnd", &a.groupEnd, &why) ||
      !sym(h, "ncclGetErrorString", &a.errorString, &why)) {
    dlclose(h);
    return "'" + lib + "' is not a usable NCCL (" + why + "; ncclSend/ncclRecv need NCCL 2.7 or later)";
  }
  gApi = a;
  return "";
}

int runNccl(const Options& o) {
  int me = 0, np = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  if (np != 2) {
    if (me == 0) std::fprintf(stderr, "cgdr-bench --nccl: %s needs exactly 2 ranks (got %d)\n", o.test.c_str(), np);
    return 2;
  }
#if CGDR_HAVE_CUDA
  int v = 0;
  check(gApi.getVersion(&v), "ncclGetVersion");
  Options opt = o;
  opt.transport = "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
                  std::to_string(v % 100) + (o.ncclBlocking ? ", each call synchronized" : "");
  UniqueId id{};
  if (me == 0) check(gApi.getUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  Ctx c;
  c.me = me;
  check(gApi.commInitRank(&c.comm, np, id, me), "ncclCommInitRank");
  cuda(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  cuda(cudaMalloc(&c.ack, 256), "cudaMalloc");
  int rc = 0;
  {
    Buffers s(o.send, o.maxSize, o.buffers), r(o.recv, o.maxSize, o.buffers);
    Report rep = p2pReport(o.test);
    rep.title += " through " + opt.transport;
    if (me == 0) printHeader(opt, rep, false);
    for (std::size_t size : sizes(o)) {
      Row row{size, measure(o, c, s, r, size)};
      if (o.validate) row.valid = validate(c, s, r, size);
      if (!row.valid) rc = 1;
      if (me == 0) {
        printRow(opt, row, false);
        rep.rows.push_back(row);
      }
    }
    if (me == 0) writeJson(opt, rep);
  }
  cudaFree(c.ack);
  cudaStreamDestroy(c.stream);
  check(gApi.commDestroy(c.comm), "ncclCommDestroy");
  return rc;
#else
  if (me == 0) std::fprintf(stderr, "cgdr-bench --nccl: this cgdr-bench was built without CUDA\n");
  return 2;
#endif
}

}  // namespace bench
