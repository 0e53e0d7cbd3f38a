// Per-(communicator, peer) queues of sends not yet handed to the real MPI. A send may only be
// posted after every earlier send to the same peer on the same communicator.
#pragma once
#include <mpi.h>

#include <cstddef>

namespace cgdr::channel::net {

class NetSend;

namespace send_order {

// Appends s to its peer's queue (the queue keeps a non-owning pointer until s is posted).
void enqueue(NetSend* s);
// True if sends to (comm, peer) are waiting; a new send there must queue behind them.
bool blocked(MPI_Comm comm, int peer);
// Posts queued sends whose copies finished, in order, without blocking.
void drain(MPI_Comm comm, int peer);
void drainAll();
// Posts every queued send to (comm, peer), waiting for their copies (local work only).
void flush(MPI_Comm comm, int peer);
void flushAll();
// Takes s out of its queue if it was not posted yet (cancel); true if it was removed.
bool remove(NetSend* s);
// Number of queued sends in the process (0 on the fast path).
std::size_t queued();

}  // namespace send_order
}  // namespace cgdr::channel::net
