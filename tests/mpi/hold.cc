// Test helper: initialises MPI (and cgdr when preloaded), says "ready", then waits a while, so a
// test can kill it from outside and check what is left behind.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::printf("ready %d\n", rank);
  std::fflush(stdout);
  sleep(argc > 1 ? std::atoi(argv[1]) : 30);
  MPI_Finalize();
  return 0;
}
