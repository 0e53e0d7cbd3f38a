// cgdr-vis-probe (bench/vis_probe/main.cu says what it measures and how it is built and run):
// the helpers every part uses, and the parts, one function per `-only` way of moving data.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace vp {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cgdr-vis-probe: %s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

inline void checkDrv(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = "?";
    cuGetErrorString(r, &s);
    std::fprintf(stderr, "cgdr-vis-probe: %s: %s\n", what, s);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

inline double median(std::vector<double>& t) {
  std::sort(t.begin(), t.end());
  return t[t.size() / 2] * 1e6;
}

// Records the event after what was just enqueued (started at t0), polls it, and keeps the issue
// time and the time until seen done unless the round is a warm-up.
inline void timeToDone(cudaStream_t s, cudaEvent_t ev, double t0, bool keep, std::vector<double>& issue,
                       std::vector<double>& total) {
  check(cudaEventRecord(ev, s), "record");
  double t1 = MPI_Wtime();
  cudaError_t q;
  while ((q = cudaEventQuery(ev)) == cudaErrorNotReady) {
  }
  check(q, "query");
  double t2 = MPI_Wtime();
  if (keep) {
    issue.push_back(t1 - t0);
    total.push_back(t2 - t0);
  }
}

struct Copy {
  const char* name;
  void* dst;
  const void* src;
};

// A graph of the n-byte copy c, then, where `record` is given, an event record node after it;
// instantiated. *g: the graph (the caller destroys both).
inline cudaGraphExec_t copyGraph(const Copy& c, size_t n, cudaGraph_t* g, cudaEvent_t record = nullptr) {
  cudaGraphNode_t node, rec;
  cudaGraphExec_t e = nullptr;
  check(cudaGraphCreate(g, 0), "graph");
  check(cudaGraphAddMemcpyNode1D(&node, *g, nullptr, 0, c.dst, c.src, n, cudaMemcpyDefault), "node");
  if (record) check(cudaGraphAddEventRecordNode(&rec, *g, &node, 1, record), "event record node");
  check(cudaGraphInstantiate(&e, *g, 0), "instantiate");
  return e;
}

// The peer's fd `fd` (both ranks in one PID namespace under mpirun).
inline int fdOf(int rank, int fd) {
  int mine[2] = {static_cast<int>(getpid()), fd}, all[4];
  MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, MPI_COMM_WORLD);
  int other = 1 - rank;
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, all[2 * other], 0));
  int got = pidfd >= 0 ? static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, all[2 * other + 1], 0)) : -1;
  if (got < 0) {
    std::fprintf(stderr, "cgdr-vis-probe: pidfd_getfd failed\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (pidfd >= 0) close(pidfd);
  return got;
}

// Waits `us` microseconds on the CPU.
inline void spinUs(double us) {
  double t = MPI_Wtime() + us * 1e-6;
  while (MPI_Wtime() < t) {
  }
}

// engines.cu
void completion(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies);
void split(std::initializer_list<Copy> copies, size_t cap);
void coop(int rank, void* mine, void* peer, size_t cap);
void rail(int rank, void* mine, void* peer, size_t cap);
void smCopy(std::initializer_list<Copy> copies, size_t cap);

// windows.cu
void wstreams(int reps, void* dstBase, const void* srcBase, const char* name, size_t cap);
void kbatch(cudaStream_t s, cudaEvent_t ev, int iters, void* dstBase, const void* srcBase, const char* name,
            bool graph);
void batch(cudaStream_t s, cudaEvent_t ev, int iters, void* dstBase, const void* srcBase, const char* name);
void callCosts(cudaStream_t s, cudaEvent_t ev, void* dev, void* host);
void rail2(int rank, void* mine, void* peer, size_t cap);

// bell.cu
void bell(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies);
void align(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies);
void evnode(cudaStream_t s, cudaEvent_t ev, int iters, std::initializer_list<Copy> copies);

// import.cu
void importPaths(int rank, int dev, bool one);

// spin.cu
void spin(int rank, cudaStream_t s, cudaEvent_t ev, int iters, void* mine, void* peer);

}  // namespace vp
