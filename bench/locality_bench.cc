// Cost of cgdr's locality detection at start-up and the shared memory it uses per host.
//   mpirun -np N cgdr-locality-bench [REPEATS]
// Prints one line: ranks, median and max (over ranks) of the median detection time, the locality
// segment's bytes per host, and the number of co-located peers rank 0 found.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/config.hpp"
#include "base/log.hpp"
#include "topo/detect.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  cgdr::base::Registry::instance().resolveFromProcess();
  cgdr::base::logConfigureFromSettings();
  int repeats = argc > 1 ? std::atoi(argv[1]) : 20;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm world;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  (void)cgdr::topo::detect(world);  // warm-up: CUDA/NVML initialisation is not detection
  std::vector<double> t;
  for (int i = 0; i < repeats; ++i) {
    MPI_Barrier(world);
    (void)cgdr::topo::detect(world);
    t.push_back(cgdr::topo::locality().seconds);
  }
  std::sort(t.begin(), t.end());
  double med = t[t.size() / 2], maxMed = 0, sumMed = 0;
  MPI_Reduce(&med, &maxMed, 1, MPI_DOUBLE, MPI_MAX, 0, world);
  MPI_Reduce(&med, &sumMed, 1, MPI_DOUBLE, MPI_SUM, 0, world);
  if (rank == 0) {
    int colocated = 0;
    for (const auto& p : cgdr::topo::locality().peers) colocated += p.engine.yes;
    std::printf("ranks %3d  detection median %8.3f ms (mean over ranks), max %8.3f ms  segment %8zu bytes/host  co-located %d\n",
                size, sumMed / size * 1e3, maxMed * 1e3, cgdr::topo::locality().shmBytes, colocated);
  }
  MPI_Comm_free(&world);
  MPI_Finalize();
  return 0;
}
