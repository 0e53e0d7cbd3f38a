// The parameter checks of the point-to-point calls. A message the engine moves between
// co-located ranks never reaches the real MPI, so the checks the real MPI makes on its arguments
// (tag, count, datatype, buffer, request and message pointers) are made here first: a quick look
// at each argument and, only where one looks wrong or the datatype is new to this thread, the
// same call to MPI_PROC_NULL, which the real MPI checks in full. Its verdict stands: an error has
// gone through the communicator's error handler with the MPI's own class and text, and the
// caller returns it as is; a call the MPI accepts goes on.
#pragma once
#include <mpi.h>

#include "base/msg.hpp"

namespace cgdr::engine::checks {

enum class Call { kBlocking, kNonBlocking, kPersistent };

// `r` is the caller's request pointer (unused for kBlocking). A persistent init is checked with
// the real MPI's init to the named peer (made and freed at once: nothing moves), so its rank is
// checked at init as the MPI does.
int send(const base::SendArgs& a, Call call, const MPI_Request* r);
int recv(const base::RecvArgs& a, Call call, const MPI_Request* r);
// A peer out of range (not MPI_PROC_NULL, nor MPI_ANY_SOURCE for a receive, nor a rank below the
// communicator's size): the real MPI's own call to that peer, which refuses it before anything
// moves; MPI_SUCCESS for a peer in range. For the real MPI's route, where a GPU send posts its
// MPI call only after its staging copy and a receive may be held by cgdr: the call must be
// refused at once, as the MPI refuses it, not accepted with a request that fails later or never.
int sendPeer(const base::SendArgs& a, Call call, const MPI_Request* r);
int recvPeer(const base::RecvArgs& a, Call call, const MPI_Request* r);
// A send-receive's two peers are checked against the communicator's size first (cgdr posts its
// halves apart; the MPI refuses the whole call where either is out of range).
int sendrecv(const base::SendArgs& s, const base::RecvArgs& r);
int sendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r);
// MPI_Probe (blocking), MPI_Iprobe (flag), MPI_Mprobe (m), MPI_Improbe (flag and m): pass the
// caller's pointers, nullptr for those the call has none of. A null flag, which the real MPIs
// do not check (Open MPI crashes), is an MPI_ERR_ARG of cgdr's own.
int probe(int tag, MPI_Comm c, bool blocking, const int* flag, const MPI_Message* m, bool matched);
// The buffer of a matched receive of a message cgdr holds, on the message's communicator.
int matchedRecv(const base::RecvArgs& a, Call call, const MPI_Request* r);

}  // namespace cgdr::engine::checks
