#include "engine/progress.hpp"

#include <sched.h>

#include "base/config.hpp"
#include "channel/net/send_order.hpp"
#include "engine/handles.hpp"
#include "engine/shm_engine.hpp"

namespace cgdr::engine {
namespace {
base::Setting<long long> gSpins("CGDR_POLL_SPINS", "64", "polls",
                                "Empty polls of a waiting call before it yields the CPU (0: it yields after each).",
                                base::IntRange{0});
}

void Backoff::pause() {
  if (++idle_ >= static_cast<unsigned long long>(gSpins.get())) {
    sched_yield();
    idle_ = 0;
  }
}

void progressAll() {
  channel::net::send_order::drainAll();
  handles::pollDetached();
  if (ShmEngine* e = ShmEngine::get()) e->progress();
}

bool mustPoll() {
  ShmEngine* e = ShmEngine::get();
  return (e && e->busy()) || channel::net::send_order::queued() > 0;
}

int pollReal(MPI_Request* r, MPI_Status* st) {
  Backoff b;
  for (;;) {
    int flag = 0;
    int rc = PMPI_Test(r, &flag, st);
    if (rc != MPI_SUCCESS || flag) return rc;
    progressAll();
    b.pause();
  }
}

void beforeBlocking() { channel::net::send_order::flushAll(); }

void waitFor(base::Op& op) {
  // op.poll() progresses the engine when op is the engine's; everything else advances here.
  Backoff b;
  while (!op.poll()) {
    channel::net::send_order::drainAll();
    handles::pollDetached();
    if (ShmEngine* e = ShmEngine::get(); e && (b.idle() & 7) == 7) e->progress();
    b.pause();
  }
}

}  // namespace cgdr::engine
