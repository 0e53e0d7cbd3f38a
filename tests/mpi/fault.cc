// Test helper for peer failure: rank 0 streams large messages to rank 1 until it is killed from
// outside; rank 1 (MPI_ERRORS_RETURN) must then get an MPI error instead of waiting forever.
#include <cstdio>
#include <vector>

#include <mpi.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int me = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  std::vector<char> buf(64 << 20, 1);
  std::printf("ready %d\n", me);
  std::fflush(stdout);
  for (long i = 0;; ++i) {
    int rc = me == 0 ? MPI_Send(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, 1, 1, MPI_COMM_WORLD)
                     : MPI_Recv(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (me > 1) break;
    if (rc != MPI_SUCCESS) {
      char s[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, s, &len);
      std::printf("rank %d detected a failure after %ld messages: %s\n", me, i, s);
      std::fflush(stdout);
      MPI_Abort(MPI_COMM_WORLD, 3);
    }
  }
  MPI_Finalize();
  return 0;
}
