// User-visible request handles for operations cgdr completes itself. Each is a real, never
// started persistent request of the real MPI (a receive from MPI_PROC_NULL on a private
// communicator), so any MPI call accepts it, and handing one out costs no MPI call.
#pragma once
#include <mpi.h>

#include <memory>

#include "base/op.hpp"

namespace cgdr::engine::handles {

void init();
void fini();
// Registers op and returns its handle.
MPI_Request add(std::unique_ptr<base::Op> op);
// The op behind h, or nullptr if h is not cgdr's (a real request or MPI_REQUEST_NULL).
base::Op* find(MPI_Request h);
// Unregisters h, gives the handle back to the pool and returns the op.
std::unique_ptr<base::Op> take(MPI_Request h);
// MPI_Request_free of an active op: it keeps progressing until complete, then is deleted.
void detach(MPI_Request h);
// True when no cgdr handle is live (the fast path of every wait/test call).
bool none();
// Polls detached ops and deletes the finished ones.
void pollDetached();

}  // namespace cgdr::engine::handles
