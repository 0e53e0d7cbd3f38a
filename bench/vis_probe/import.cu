// cgdr-vis-probe: the ways another process's GPU memory is exported and imported.
#include "probe.hpp"

namespace vp {

// Another process's GPU memory, exported one way and imported here (twenty-ninth session, `-only
// import`). A cuMem allocation imported from a POSIX fd runs ~7 % below a legacy IPC mapping of
// the same GPU's memory where that GPU is invisible to the importer (twenty-seventh session): is it
// the allocation's granularity, the mapping's alignment, or the fd import itself (a stream-ordered
// pool shared by fd takes another import path in the driver)?

void importPaths(int rank, int dev, bool one) {
  const size_t n = size_t{128} << 20;
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "stream");
  void* dst = nullptr;
  check(cudaMalloc(&dst, n), "cudaMalloc");
  if (rank == 0)
    std::printf("# import paths (%s): GB/s of a pull by rank 0 alone (128 MiB / 8 MiB / 1 MiB) | both ranks pulling "
                "128 MiB / 8 MiB at once (total) | both pushing, the same, median of 20\n",
                one ? "each rank sees only its GPU" : "both GPUs");
  if (rank == 0) {
    int fabric = 0;
    CUdevice cd;
    checkDrv(cuDeviceGet(&cd, dev), "device");
    cuDeviceGetAttribute(&fabric, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_FABRIC_SUPPORTED, cd);
    std::printf("# fabric handles supported: %d\n", fabric);
  }
  const char* names[] = {"cuMem min gran, reserve align 0", "cuMem recommended gran+align",
                         "cuMem, VA aligned to 1 GiB",     "cuMem gpuDirectRDMACapable",
                         "cuMem, importer's access set twice", "pool fd, cudaMemPoolImportPointer",
                         "legacy cudaIpc handle",          "cuMem fabric handle (bytes, no fd)"};
  for (int v = 0; v < 8; ++v) {
    void* src = nullptr;  // this rank's exported memory
    void* peer = nullptr;  // the peer's, mapped here
    CUmemGenericAllocationHandle mh = 0, ph = 0;
    CUdeviceptr va = 0, pva = 0;
    size_t bytes = n, align = 0;
    cudaMemPool_t pool = nullptr, ipool = nullptr;
    const char* err = nullptr;
    if (v <= 4 || v == 7) {
      CUmemAllocationProp prop{};
      prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
      prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      prop.location.id = dev;
      prop.requestedHandleTypes = v == 7 ? CU_MEM_HANDLE_TYPE_FABRIC : CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
      if (v == 3) prop.allocFlags.gpuDirectRDMACapable = 1;
      size_t gran = 0;
      checkDrv(cuMemGetAllocationGranularity(&gran, &prop, v == 1 ? CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
                                                                  : CU_MEM_ALLOC_GRANULARITY_MINIMUM),
               "granularity");
      if (v == 1) align = gran;
      if (v == 2) align = gran = size_t{1} << 30;
      bytes = (n + gran - 1) / gran * gran;
      CUmemAccessDesc acc{};
      acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
      acc.location.id = dev;
      acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
      CUresult r = cuMemCreate(&mh, bytes, &prop, 0);
      CUmemFabricHandle fh{};
      if (r != CUDA_SUCCESS) {
        err = "cuMemCreate";
        const char* es = "?";
        cuGetErrorString(r, &es);
        std::printf("# rank %d: cuMemCreate for %s: %s\n", rank, names[v], es);
      } else if (v == 7 && (r = cuMemExportToShareableHandle(&fh, mh, CU_MEM_HANDLE_TYPE_FABRIC, 0)) != CUDA_SUCCESS) {
        err = "export";
        const char* es = "?";
        cuGetErrorString(r, &es);
        std::printf("# rank %d: export of %s: %s\n", rank, names[v], es);
        cuMemRelease(mh);
      } else {
        checkDrv(cuMemAddressReserve(&va, bytes, align, 0, 0), "reserve");
        checkDrv(cuMemMap(va, bytes, 0, mh, 0), "map");
        checkDrv(cuMemSetAccess(va, bytes, &acc, 1), "access");
        src = reinterpret_cast<void*>(va);
      }
      int ok = err == nullptr, all = 0;
      MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (!all) {
        if (rank == 0) std::printf("  %-36s not available (%s)\n", names[v], err ? err : "peer");
        if (src) { cuMemUnmap(va, bytes); cuMemAddressFree(va, bytes); cuMemRelease(mh); }
        continue;
      }
      if (v == 7) {
        CUmemFabricHandle pf{};
        MPI_Sendrecv(&fh, sizeof fh, MPI_BYTE, 1 - rank, 9, &pf, sizeof pf, MPI_BYTE, 1 - rank, 9, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        checkDrv(cuMemImportFromShareableHandle(&ph, &pf, CU_MEM_HANDLE_TYPE_FABRIC), "import fabric");
      } else {
        int fd = -1;
        checkDrv(cuMemExportToShareableHandle(&fd, mh, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), "export");
        int pfd = fdOf(rank, fd);
        checkDrv(cuMemImportFromShareableHandle(&ph, reinterpret_cast<void*>(static_cast<uintptr_t>(pfd)),
                                                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
                 "import");
        close(pfd);
        close(fd);
      }
      checkDrv(cuMemAddressReserve(&pva, bytes, align, 0, 0), "reserve peer");
      checkDrv(cuMemMap(pva, bytes, 0, ph, 0), "map peer");
      checkDrv(cuMemSetAccess(pva, bytes, &acc, 1), "access peer");
      if (v == 4) {  // read-only first, then read-write: whether the second call re-makes the mapping
        CUmemAccessDesc ro = acc;
        ro.flags = CU_MEM_ACCESS_FLAGS_PROT_READ;
        checkDrv(cuMemSetAccess(pva, bytes, &ro, 1), "access peer read-only");
        checkDrv(cuMemSetAccess(pva, bytes, &acc, 1), "access peer again");
      }
      peer = reinterpret_cast<void*>(pva);
    } else if (v == 5) {
      cudaMemPoolProps pp{};
      pp.allocType = cudaMemAllocationTypePinned;
      pp.handleTypes = cudaMemHandleTypePosixFileDescriptor;
      pp.location.type = cudaMemLocationTypeDevice;
      pp.location.id = dev;
      check(cudaMemPoolCreate(&pool, &pp), "pool create");
      check(cudaMallocFromPoolAsync(&src, n, pool, st), "pool alloc");
      check(cudaStreamSynchronize(st), "sync");
      int fd = -1;
      check(cudaMemPoolExportToShareableHandle(&fd, pool, cudaMemHandleTypePosixFileDescriptor, 0), "pool export");
      cudaMemPoolPtrExportData mineData{}, peerData{};
      check(cudaMemPoolExportPointer(&mineData, src), "export pointer");
      MPI_Sendrecv(&mineData, sizeof mineData, MPI_BYTE, 1 - rank, 7, &peerData, sizeof peerData, MPI_BYTE, 1 - rank, 7,
                   MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      int pfd = fdOf(rank, fd);
      check(cudaMemPoolImportFromShareableHandle(&ipool, reinterpret_cast<void*>(static_cast<uintptr_t>(pfd)),
                                                 cudaMemHandleTypePosixFileDescriptor, 0),
            "pool import");
      cudaMemAccessDesc d{};
      d.location.type = cudaMemLocationTypeDevice;
      d.location.id = dev;
      d.flags = cudaMemAccessFlagsProtReadWrite;
      check(cudaMemPoolSetAccess(ipool, &d, 1), "pool access");
      check(cudaMemPoolImportPointer(&peer, ipool, &peerData), "import pointer");
      close(pfd);
      close(fd);
    } else {
      check(cudaMalloc(&src, n), "cudaMalloc");
      cudaIpcMemHandle_t h, ph2;
      check(cudaIpcGetMemHandle(&h, src), "ipc handle");
      MPI_Sendrecv(&h, sizeof h, MPI_BYTE, 1 - rank, 8, &ph2, sizeof ph2, MPI_BYTE, 1 - rank, 8, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE);
      check(cudaIpcOpenMemHandle(&peer, ph2, cudaIpcMemLazyEnablePeerAccess), "ipc open");
    }
    check(cudaMemset(src, rank + 1, n), "fill");
    check(cudaDeviceSynchronize(), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) std::printf("  %-36s", names[v]);
    // both: 0 rank 0 pulls alone, 1 both pull, 2 both push (each writes its bytes into the peer's)
    for (int both = 0; both < 3; ++both) {
      for (size_t m : {n, size_t{8} << 20, size_t{1} << 20}) {
        if (both && m == (size_t{1} << 20)) continue;
        int reps = m == n ? 1 : m == (size_t{8} << 20) ? 16 : 128;
        std::vector<double> t;
        for (int it = 0; it < 23; ++it) {
          MPI_Barrier(MPI_COMM_WORLD);
          double t0 = MPI_Wtime();
          if (rank == 0 || both) {
            for (int k = 0; k < reps; ++k) {
              size_t o = (k * m) % n;
              if (both == 2)
                check(cudaMemcpyAsync(static_cast<char*>(peer) + o, static_cast<char*>(src) + o, m, cudaMemcpyDefault, st),
                      "push");
              else
                check(cudaMemcpyAsync(static_cast<char*>(dst) + o, static_cast<char*>(peer) + o, m, cudaMemcpyDefault, st),
                      "pull");
            }
            check(cudaStreamSynchronize(st), "sync");
          }
          double mt = MPI_Wtime() - t0, all = 0;
          MPI_Allreduce(&mt, &all, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
          if (it >= 3) t.push_back(all);
        }
        double gbs = double(m) * reps * (both ? 2 : 1) / (median(t) * 1e-6) / 1e9;
        if (rank == 0) std::printf(" %7.1f", gbs);
      }
      if (rank == 0) std::printf(both == 2 ? "\n" : " |");
    }
    std::fflush(stdout);
    check(cudaDeviceSynchronize(), "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    if (v <= 4 || v == 7) {
      cuMemUnmap(pva, bytes);
      cuMemAddressFree(pva, bytes);
      cuMemRelease(ph);
      cuMemUnmap(va, bytes);
      cuMemAddressFree(va, bytes);
      cuMemRelease(mh);
    } else if (v == 5) {
      check(cudaFreeAsync(peer, st), "free import");
      check(cudaStreamSynchronize(st), "sync");
      MPI_Barrier(MPI_COMM_WORLD);
      check(cudaFreeAsync(src, st), "free pool memory");
      check(cudaStreamSynchronize(st), "sync");
      cudaMemPoolDestroy(ipool);
      cudaMemPoolDestroy(pool);
    } else {
      cudaIpcCloseMemHandle(peer);
      MPI_Barrier(MPI_COMM_WORLD);
      cudaFree(src);
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  cudaFree(dst);
  cudaStreamDestroy(st);
}

}  // namespace vp
