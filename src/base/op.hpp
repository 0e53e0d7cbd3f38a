// An operation cgdr completes itself (a staged send, a receive awaiting its copy to the GPU, an
// engine transfer...). The engine maps user request handles onto Ops and drives them from the
// MPI wait/test/probe calls it intercepts.
#pragma once
#include <mpi.h>

#include <vector>

#include "base/dtype.hpp"
#include "base/status.hpp"

namespace cgdr::base {

class Op {
 public:
  Op() = default;
  Op(const Op&) = delete;  // an owned datatype is freed once
  Op& operator=(const Op&) = delete;
  virtual ~Op() {
    if (owned_.empty()) return;
    int done = 0;
    PMPI_Finalized(&done);  // (an operation of a program that never completed it)
    if (!done)
      for (MPI_Datatype& t : owned_) freeDatatype(&t);
  }
  // Advances without blocking; returns true once complete. status/error are then final.
  virtual bool poll() = 0;
  // MPI_Cancel: tries to cancel; completion still comes through poll().
  virtual int cancel() { return MPI_SUCCESS; }
  // Persistent operations (MPI_*_init) start again with start() after each completion.
  virtual bool persistent() const { return false; }
  virtual int start() { return MPI_ERR_REQUEST; }
  // For persistent operations: started and not yet completed-and-seen by the user.
  virtual bool active() const { return true; }
  // The user saw the completion (Wait/Test returned it).
  virtual void retire() {}

  MPI_Status status{};
  int error = MPI_SUCCESS;
  // True if the error was already raised through the communicator's handler (by the real MPI).
  bool errorRaised = false;
  // A failure cgdr itself detected (CUDA, staging...); the engine raises it on `comm`.
  Status failure;
  MPI_Comm comm = MPI_COMM_NULL;

  // Takes a datatype cgdr made for this operation alone (a large count's), freed with it.
  void own(MPI_Datatype t) { owned_.push_back(t); }

 private:
  std::vector<MPI_Datatype> owned_;  // (empty, no allocation, for all but large counts)
};

// The status MPI gives for a null or inactive request (built once with the MPI's own calls,
// then copied: it is on every operation's path).
inline void setEmptyStatus(MPI_Status* st) {
  static const MPI_Status kEmpty = [] {
    MPI_Status e{};
    e.MPI_SOURCE = MPI_ANY_SOURCE;
    e.MPI_TAG = MPI_ANY_TAG;
    e.MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements(&e, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(&e, 0);
    return e;
  }();
  if (st != MPI_STATUS_IGNORE) *st = kEmpty;
}

}  // namespace cgdr::base
