// Push vs pull between two processes through legacy CUDA IPC mappings, without cgdr: what one
// copy costs when the buffer on the other side was opened from another process (the floor of
// cgdr's cuda-ipc channel, as cgdr-peer-copy-bench is for copies inside one process).
// Run with the plain MPI, 2 ranks, one GPU each (rank r uses GPU r % count):
//   mpirun -np 2 cgdr-ipc-probe [-i N]
// Per size, median microseconds of: "push" (rank 0 copies its buffer into rank 1's, polls an
// event), "pull" (rank 0 copies rank 1's buffer into its own), and the ping-pongs "push pp" /
// "pull pp" (half round trip; each hop: one copy plus a zero-byte host message telling the peer,
// as a rendezvous would); "one pp": rank 0 makes every copy (pushes its messages, pulls rank 1's),
// so only one process puts work on the GPU(s); "local pp": each hop's sender copies 8 bytes within
// its own buffer (no IPC), to tell what GPU work alternating between two processes costs; "D2H
// pp" / "H2D pp": the same with a copy of n bytes between its buffer and its pinned host memory;
// the other host-to-device ways to find one a copy engine runs (small ones pay the switch above):
// "H2D page" (from pageable memory), "H2D sync" (cudaMemcpy), "H2D 2D" (cudaMemcpy2DAsync),
// "H2D map" (a device-to-device copy from the pinned memory's device mapping).
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "cgdr-ipc-probe: %s: %s\n", what, cudaGetErrorString(e));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iters = 1000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "-i") iters = std::atoi(argv[++i]);
  int ngpu = 0;
  if (size != 2 || cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
    if (rank == 0) std::printf("SKIP cgdr-ipc-probe: needs 2 ranks and a GPU\n");
    MPI_Finalize();
    return 77;
  }
  check(cudaSetDevice(rank % ngpu), "cudaSetDevice");
  const std::size_t cap = std::size_t{1} << 20;
  void* mine = nullptr;
  check(cudaMalloc(&mine, cap), "cudaMalloc");
  void* host = nullptr;
  check(cudaMallocHost(&host, cap), "cudaMallocHost");
  std::vector<char> pageable(cap, 1);
  void* hostDev = nullptr;  // the pinned memory as the device addresses it
  check(cudaHostGetDevicePointer(&hostDev, host, 0), "cudaHostGetDevicePointer");
  cudaIpcMemHandle_t h[2];
  check(cudaIpcGetMemHandle(&h[rank], mine), "cudaIpcGetMemHandle");
  MPI_Allgather(&h[rank], sizeof h[0], MPI_BYTE, h, sizeof h[0], MPI_BYTE, MPI_COMM_WORLD);
  void* peer = nullptr;
  check(cudaIpcOpenMemHandle(&peer, h[1 - rank], cudaIpcMemLazyEnablePeerAccess), "cudaIpcOpenMemHandle");
  cudaStream_t s;
  cudaEvent_t ev;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");
  auto wait = [&] {
    check(cudaEventRecord(ev, s), "cudaEventRecord");
    while (cudaEventQuery(ev) == cudaErrorNotReady) {
    }
  };
  auto copy = [&](void* dst, const void* src, std::size_t n) {
    check(cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s), "cudaMemcpyAsync");
    wait();
  };
  auto median = [](std::vector<double>& t) {
    std::sort(t.begin(), t.end());
    return t[t.size() / 2] * 1e6;
  };
  if (rank == 0)
    std::printf("# %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s %10s\n", "bytes", "push", "pull",
                "push pp", "pull pp", "one pp", "local pp", "D2H pp", "H2D pp", "H2D page", "H2D sync", "H2D 2D",
                "H2D map");
  for (std::size_t n : {std::size_t{8}, std::size_t{4096}, std::size_t{16384}, std::size_t{32768}, std::size_t{65536},
                        cap}) {
    double push = 0, pull = 0;
    if (rank == 0) {  // one-sided: rank 1 waits in the barrier
      std::vector<double> a, b;
      for (int k = 0; k < iters + 10; ++k) {
        double t0 = MPI_Wtime();
        copy(peer, mine, n);
        double t1 = MPI_Wtime();
        copy(mine, peer, n);
        double t2 = MPI_Wtime();
        if (k >= 10) {
          a.push_back(t1 - t0);
          b.push_back(t2 - t1);
        }
      }
      push = median(a);
      pull = median(b);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    // Ping-pong: the mover copies, then a zero-byte message; push: the sender moves, pull: the
    // receiver moves after the message.
    constexpr int kModes = 10;
    double pp[kModes];
    for (int mode = 0; mode < kModes; ++mode) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = 0;
      for (int k = 0; k < iters + 10; ++k) {
        if (k == 10) t0 = MPI_Wtime();
        for (int turn = 0; turn < 2; ++turn) {
          bool sender = turn == rank;
          if (sender) {
            if (mode == 0 || (mode == 2 && rank == 0)) copy(peer, mine, n);
            if (mode == 3) copy(static_cast<char*>(mine) + 8, mine, 8);
            if (mode == 4) copy(host, mine, n);
            if (mode == 5) copy(mine, host, n);
            if (mode == 6) copy(mine, pageable.data(), n);
            if (mode == 7) check(cudaMemcpy(mine, host, n, cudaMemcpyHostToDevice), "cudaMemcpy");
            if (mode == 8) {
              check(cudaMemcpy2DAsync(mine, n, host, n, n, 1, cudaMemcpyHostToDevice, s), "cudaMemcpy2DAsync");
              wait();
            }
            if (mode == 9) {
              check(cudaMemcpyAsync(mine, hostDev, n, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync mapped");
              wait();
            }
            MPI_Send(nullptr, 0, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD);
          } else {
            MPI_Recv(nullptr, 0, MPI_BYTE, 1 - rank, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (mode == 1 || (mode == 2 && rank == 0)) copy(mine, peer, n);
          }
        }
      }
      pp[mode] = (MPI_Wtime() - t0) / iters / 2 * 1e6;
    }
    if (rank == 0)
      std::printf("  %10zu %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f %10.2f\n", n,
                  push, pull, pp[0], pp[1], pp[2], pp[3], pp[4], pp[5], pp[6], pp[7], pp[8], pp[9]);
  }
  cudaIpcCloseMemHandle(peer);
  cudaFree(mine);
  cudaFreeHost(host);
  MPI_Finalize();
  return 0;
}
