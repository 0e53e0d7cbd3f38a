// Per-communicator peer tables. Every intracommunicator cgdr sees created gets a context id agreed
// by its members (one allreduce inside the creating call), the world rank of each member and,
// for each member, whether cgdr's engine serves it (co-located) or the real MPI does. Unknown
// communicators (intercommunicators, ones made by calls cgdr does not intercept) are served by
// the real MPI alone, consistently on both sides.
#pragma once
#include <mpi.h>

#include <vector>

namespace cgdr::channel::shm {
struct Peer;
}

namespace cgdr::engine {

struct CommInfo {
  MPI_Comm comm = MPI_COMM_NULL;
  int ctx = -1;
  int rank = 0;
  int size = 0;
  std::vector<int> world;                      // comm rank -> MPI_COMM_WORLD rank
  std::vector<channel::shm::Peer*> peer;       // comm rank -> co-located peer, nullptr: real MPI
  bool anyLocal = false;
  bool anyRemote = false;
  // The comm rank whose world rank is w, or -1.
  int rankOfWorld(int w) const;
};

namespace comms {

// Registers MPI_COMM_WORLD and MPI_COMM_SELF (after the engine is up).
void init();
void fini();
// A new intracommunicator: collective over `c` (agrees on its context id).
void created(MPI_Comm c);
void freed(MPI_Comm c);
// Recomputes every known communicator's peer table (after a re-detection).
void rebuild();
// The table of a communicator, or nullptr (then the real MPI serves it).
const CommInfo* find(MPI_Comm c);
const CommInfo* byContext(int ctx);

}  // namespace comms
}  // namespace cgdr::engine
