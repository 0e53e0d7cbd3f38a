// MPI_Message handles for engine messages taken by a matched probe (MPI_Mprobe/MPI_Improbe). The
// handles are cgdr's own values, recognised by MPI_Mrecv/MPI_Imrecv before the real MPI sees them.
#pragma once
#include <mpi.h>

#include <memory>

#include "engine/shm_engine.hpp"

namespace cgdr::engine::messages {

MPI_Message add(std::unique_ptr<Unexpected> m, const CommInfo* c);
// The communicator of the message behind h, or nullptr if h is not cgdr's.
const CommInfo* ours(MPI_Message h);
// Removes the message behind h (nullptr if h is not cgdr's).
std::unique_ptr<Unexpected> take(MPI_Message h, const CommInfo** c);

}  // namespace cgdr::engine::messages
