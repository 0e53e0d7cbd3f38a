// Progress of everything cgdr owns, driven from the MPI calls it intercepts.
#pragma once
#include "base/op.hpp"

namespace cgdr::engine {

// Advances every pending operation a little, without blocking.
void progressAll();
// Called before the real MPI may block: hands every queued send to the real MPI (waiting only
// for local GPU copies), so a peer waiting for one of them can never deadlock with us.
void beforeBlocking();
// Blocks until op completes, keeping everything else progressing.
void waitFor(base::Op& op);

// Spins, then yields the CPU, so oversubscribed ranks still progress.
class Backoff {
 public:
  void pause();
  void reset() { idle_ = 0; }

 private:
  unsigned idle_ = 0;
};

}  // namespace cgdr::engine
