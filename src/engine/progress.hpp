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
// True while cgdr has work a blocked rank could hold up (engine operations, queued sends): then
// blocking calls into the real MPI are made non-blocking and polled.
bool mustPoll();
// Completes a real MPI request while progressing everything else.
int pollReal(MPI_Request* r, MPI_Status* st);

// Spins, then yields the CPU, so oversubscribed ranks still progress.
class Backoff {
 public:
  void pause();
  void reset() { idle_ = 0; }
  unsigned idle() const { return idle_; }

 private:
  unsigned idle_ = 0;
};

}  // namespace cgdr::engine
