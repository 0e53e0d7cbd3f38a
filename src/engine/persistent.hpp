// Persistent point-to-point requests (MPI_*_init): each MPI_Start makes a fresh operation through
// the engine, so a start behaves exactly like the matching non-blocking call.
#pragma once
#include <mpi.h>

#include "base/msg.hpp"

namespace cgdr::engine {

int sendInit(const base::SendArgs& a, MPI_Request* r);
int recvInit(const base::RecvArgs& a, MPI_Request* r);
int start(MPI_Request* r);
int startall(int n, MPI_Request* rs);

}  // namespace cgdr::engine
