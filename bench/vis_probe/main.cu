// What a copy to or from another process's GPU memory costs when that GPU is, or is not, visible
// to the copying process (CUDA_VISIBLE_DEVICES), and whether the way the copy is issued matters:
// cudaMemcpyAsync, a CUDA graph captured once, the same graph re-pointed per copy
// (cudaGraphExecMemcpyNodeSetParams1D). (A copy kernel was measured too, on 2026-11-23: no better
// than cudaMemcpyAsync, 8.5–10 us for 8 B, so it was dropped.) No cgdr. The memory is an
// exportable cuMem allocation (POSIX fd, as cgdr's cuda-vmm channel uses across containers),
// handed over with pidfd_getfd (both ranks in one PID namespace under mpirun).
// Built on the GPU machine by bench/gpu-suite.sh (step visprobe), from this directory's parts (one
// per way of moving data; probe.hpp lists them):
//   nvcc -O2 -arch=sm_90 bench/vis_probe/*.cu -lcuda $(mpicxx --showme:compile) $(mpicxx --showme:link)
//   mpirun -np 2 cgdr-vis-probe one|both [-i N]
// Prints per size the median issue time (the enqueue calls) and total time (until an event
// query says done) in microseconds, for each variant, on rank 0. Then (added 2026-11-23, fourth
// session): what single runtime/driver calls on a small message's path cost; whether one large
// copy moves more split over several streams, moved by both GPUs at once (the receiver pulling
// part, the sender pushing the rest), or by a copy kernel instead of a copy engine; and how the
// end of an 8-byte copy is seen soonest (event query, stream synchronize, or a word of mapped
// host memory written after the copy by cuStreamWriteValue32 or by a second copy). And (fifth
// session, `-only batch`): a window of small pulls issued one by one or as one batch. And
// (twenty-fifth session, `-only rail`): whether host memory over PCIe adds to NVLink for one message.
// And (twenty-ninth session, `-only import`): whether the way the peer's memory is exported and
// mapped changes the pull bandwidth where the peer's GPU is invisible (the one-visible-GPU limit);
// and (`-only rail2`) what host copies on both GPUs do to NVLink traffic both ways. And
// (thirty-eighth session, `-only wstreams`): windows of large copies over one stream or several.
// And (fortieth session, `-only bell`): an 8-byte copy queued before its message behind a wait on
// mapped host memory, started by one store. And (forty-second session, `-only align`): whether
// the first event query of an 8-byte copy, held back until the copy should have ended, sees the
// end sooner than queries from the issue on; and (`-only evnode`) whether an event record node
// inside the copy's graph is seen done sooner than cudaEventRecord after the launch. And
// (forty-seventh session, `-only spin`): messages copied by a resident kernel rung through mapped
// host memory, against the copy engine, in a ping-pong between the ranks.
#include "probe.hpp"

using namespace vp;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bool one = argc > 1 && std::string(argv[1]) == "one";
  int iters = 2000;
  std::string only;  // -only batch: that section alone
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "-i") iters = std::atoi(argv[++i]);
    else if (std::string(argv[i]) == "-only") only = argv[++i];
  }
  if (one) setenv("CUDA_VISIBLE_DEVICES", rank ? "1" : "0", 1);
  int ngpu = 0;
  if (size != 2 || cudaGetDeviceCount(&ngpu) != cudaSuccess || ngpu < 1) {
    if (rank == 0) std::printf("SKIP cgdr-vis-probe: needs 2 ranks and a GPU\n");
    MPI_Finalize();
    return 77;
  }
  int dev = one ? 0 : rank % ngpu;
  check(cudaSetDevice(dev), "cudaSetDevice");
  check(cudaFree(nullptr), "context");
  const size_t cap = size_t{130} << 20;
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  size_t gran = 0;
  checkDrv(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity");
  size_t bytes = (cap + gran - 1) / gran * gran;
  CUmemAccessDesc acc{};
  acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  acc.location.id = dev;
  acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  auto mapped = [&](CUmemGenericAllocationHandle h) {
    CUdeviceptr p = 0;
    checkDrv(cuMemAddressReserve(&p, bytes, 0, 0, 0), "reserve");
    checkDrv(cuMemMap(p, bytes, 0, h, 0), "map");
    checkDrv(cuMemSetAccess(p, bytes, &acc, 1), "access");
    return reinterpret_cast<void*>(p);
  };
  CUmemGenericAllocationHandle mh;
  checkDrv(cuMemCreate(&mh, bytes, &prop, 0), "cuMemCreate");
  void* mine = mapped(mh);
  void* mine2 = nullptr;
  check(cudaMalloc(&mine2, cap), "cudaMalloc");
  int fd = -1;
  checkDrv(cuMemExportToShareableHandle(&fd, mh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export");
  int peerFd = fdOf(rank, fd);
  CUmemGenericAllocationHandle ph;
  checkDrv(cuMemImportFromShareableHandle(&ph, reinterpret_cast<void*>(static_cast<uintptr_t>(peerFd)),
                                          CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
           "import");
  void* peer = mapped(ph);
  MPI_Barrier(MPI_COMM_WORLD);

  cudaStream_t s;
  cudaEvent_t ev;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "stream");
  check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "event");
  if (rank == 0 && only == "batch") {
    std::printf("# visibility: %s; N copies: issue/total us, memcpy each vs one cudaMemcpyBatchAsync\n",
                one ? "each rank sees only its GPU" : "both GPUs");
    batch(s, ev, iters, mine, peer, "pull V<-peer");
    batch(s, ev, iters, mine2, peer, "pull D<-peer");
    std::fflush(stdout);
  }
  if (rank == 0 && only.empty()) {
    std::printf("# visibility: %s (%d device(s) visible to rank 0)\n", one ? "each rank sees only its GPU" : "both GPUs",
                ngpu);
    std::printf("# per pair and size: issue/total us of cudaMemcpyAsync, the captured graph, the graph re-pointed per copy\n");
    void* mine3 = nullptr;
    void* host = nullptr;
    check(cudaMalloc(&mine3, cap), "cudaMalloc");
    check(cudaHostAlloc(&host, cap, cudaHostAllocPortable), "cudaHostAlloc");
    struct Pair {
      const char* name;
      void* dst;
      const void* src;
    } pairs[] = {{"pull V<-peer", mine, peer},   {"push peer<-V", peer, mine},  {"pull D<-peer", mine2, peer},
                 {"push peer<-D", peer, mine2},  {"local D<-V", mine2, mine},   {"local D<-D", mine3, mine2},
                 {"D2H H<-D", host, mine2},      {"H2D D<-H", mine2, host}};
    for (size_t n : {size_t{8}, size_t{65536}, size_t{1} << 20, size_t{64} << 20}) {
      int reps = n >= (size_t{64} << 20) ? iters / 10 : iters;
      for (auto& pr : pairs) {
        if (n >= (size_t{64} << 20) && pr.dst != mine && pr.dst != peer) continue;
        cudaGraph_t g;
        cudaGraphExec_t exec = nullptr;
        double ti = MPI_Wtime();
        check(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), "capture");
        check(cudaMemcpyAsync(pr.dst, pr.src, n, cudaMemcpyDefault, s), "capture copy");
        check(cudaStreamEndCapture(s, &g), "end capture");
        check(cudaGraphInstantiate(&exec, g, 0), "instantiate");
        ti = MPI_Wtime() - ti;
        cudaGraphNode_t node;
        size_t nn = 1;
        check(cudaGraphGetNodes(g, &node, &nn), "nodes");
        std::printf("  %-14s %8zu  instantiate %.1f us |", pr.name, n, ti * 1e6);
        for (int kind = 0; kind < 3; ++kind) {  // memcpy, graph as captured, graph re-pointed each time
          std::vector<double> issue, total;
          for (int k = 0; k < reps + 20; ++k) {
            size_t off = (k & 1) ? (cap - n) / 2 / 256 * 256 : 0;
            double t0 = MPI_Wtime();
            if (kind == 0) check(cudaMemcpyAsync(pr.dst, pr.src, n, cudaMemcpyDefault, s), "copy");
            if (kind == 2)
              check(cudaGraphExecMemcpyNodeSetParams1D(exec, node, static_cast<char*>(pr.dst) + off,
                                                       static_cast<const char*>(pr.src) + off, n, cudaMemcpyDefault),
                    "set params");
            if (kind > 0) check(cudaGraphLaunch(exec, s), "graph launch");
            timeToDone(s, ev, t0, k >= 20, issue, total);
          }
          double tt = median(total);
          std::printf(" %s %5.2f/%7.2f", kind == 0 ? "memcpy" : kind == 1 ? "graph" : "re-pointed", median(issue), tt);
          if (n >= (size_t{1} << 20)) std::printf(" (%.0f GB/s)", n / tt / 1e3);
        }
        std::printf("\n");
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(g);
      }
    }
    callCosts(s, ev, mine2, host);
    split({{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}}, cap);
    smCopy({{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}}, cap);
    completion(s, ev, iters, {{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}, {"H2D D<-H", mine2, host},
                              {"D2H H<-D", host, mine2}});
    std::fflush(stdout);
  }
  if (only.empty()) coop(rank, mine, peer, cap);
  if (only.empty() || only == "rail") rail(rank, mine, peer, cap);
  if (only == "import") importPaths(rank, dev, one);
  if (rank == 0 && only == "kbatch") {
    std::printf("# visibility: %s; N small pulls: issue/total us, copy engine vs one kernel\n",
                one ? "each rank sees only its GPU" : "both GPUs");
    kbatch(s, ev, iters, mine, peer, "pull V<-peer", one);
    kbatch(s, ev, iters, mine2, peer, "pull D<-peer", one);
    kbatch(s, ev, iters, peer, mine2, "push peer<-D", one);
    std::fflush(stdout);
  }
  if (rank == 0 && only == "bell") {
    std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    bell(s, ev, iters, {{"pull V<-peer", mine, peer}, {"push peer<-V", peer, mine}, {"push peer<-D", peer, mine2}});
    std::fflush(stdout);
  }
  if (rank == 0 && only == "align") {
    std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    align(s, ev, iters, {{"push peer<-V", peer, mine}, {"push peer<-D", peer, mine2}, {"pull V<-peer", mine, peer}});
    std::fflush(stdout);
  }
  if (rank == 0 && only == "evnode") {
    std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    evnode(s, ev, iters, {{"push peer<-V", peer, mine}, {"push peer<-D", peer, mine2}, {"pull V<-peer", mine, peer}});
    std::fflush(stdout);
  }
  if (only == "rail2") rail2(rank, mine, peer, cap);
  if (only == "spin") {
    if (rank == 0) std::printf("# visibility: %s\n", one ? "each rank sees only its GPU" : "both GPUs");
    spin(rank, s, ev, iters, mine, peer);
    std::fflush(stdout);
  }
  if (rank == 0 && only == "wstreams") {
    std::printf("# visibility: %s; windows of copies, one stream vs round-robin over several\n",
                one ? "each rank sees only its GPU" : "both GPUs");
    wstreams(iters, peer, mine, "push peer<-V", cap);
    wstreams(iters, peer, mine2, "push peer<-D", cap);
    wstreams(iters, mine, peer, "pull V<-peer", cap);
    std::fflush(stdout);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
