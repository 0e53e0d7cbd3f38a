// cgdr's own MPI error codes (one per cause, with a message MPI_Error_string returns) and the
// single place where an error is raised through a communicator's error handler.
#pragma once
#include <mpi.h>

#include "base/status.hpp"

namespace cgdr::base {

// Creates the error codes; called once after the real MPI is initialized.
void initErrors();
// The MPI error code for a cgdr failure.
int errorCode(Errc e);
// Logs the cause and calls comm's error handler (which may abort); returns the code for the
// caller to return when the handler returns (MPI_ERRORS_RETURN).
int raise(MPI_Comm comm, const Status& s);
// Completes an op's error: raises a cgdr failure that the real MPI has not raised already.
int settleError(MPI_Comm comm, int error, bool raised, const Status& failure);

}  // namespace cgdr::base
