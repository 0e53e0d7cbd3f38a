#include "coll/coll_op.hpp"

#include "base/errors.hpp"

namespace cgdr::coll {
namespace {

// Shared by both ops: advances running -> copying -> done.
template <class State>
bool advance(State& state, MPI_Request& inner, Staging& staging, base::Op& op) {
  if (state == State::kRunning) {
    int flag = 0;
    int rc = PMPI_Test(&inner, &flag, &op.status);
    if (rc != MPI_SUCCESS) {
      op.error = rc;
      op.errorRaised = true;
      state = State::kDone;
      return true;
    }
    if (!flag) return false;
    base::Status st = staging.startCopyOut();
    if (!st.isOk()) {
      op.error = MPI_ERR_OTHER;
      op.failure = st;
      state = State::kDone;
      return true;
    }
    state = State::kCopying;
  }
  if (state == State::kCopying) {
    if (!staging.copyOutDone(&op.failure)) return false;
    if (!op.failure.isOk()) op.error = MPI_ERR_OTHER;
    state = State::kDone;
  }
  return true;
}

}  // namespace

CollOp::CollOp(std::unique_ptr<Staging> staging, MPI_Request inner, MPI_Comm c)
    : staging_(std::move(staging)), inner_(inner) {
  comm = c;
}

bool CollOp::poll() { return advance(state_, inner_, *staging_, *this); }

PersistentCollOp::PersistentCollOp(std::unique_ptr<Staging> staging, MPI_Request inner, MPI_Comm c)
    : staging_(std::move(staging)), inner_(inner) {
  comm = c;
  base::setEmptyStatus(&status);
}

PersistentCollOp::~PersistentCollOp() {
  if (inner_ != MPI_REQUEST_NULL) PMPI_Request_free(&inner_);
}

int PersistentCollOp::start() {
  if (active_) return base::raise(comm, base::Status(base::Errc::kArgument, "MPI_Start on an active request"));
  base::Status st = staging_->stageIn();
  if (!st.isOk()) return base::raise(comm, st);
  int rc = PMPI_Start(&inner_);
  if (rc != MPI_SUCCESS) return rc;
  error = MPI_SUCCESS;
  errorRaised = false;
  failure = base::Status();
  state_ = State::kRunning;
  active_ = true;
  return MPI_SUCCESS;
}

bool PersistentCollOp::poll() {
  if (!active_) return true;
  return advance(state_, inner_, *staging_, *this);
}

void PersistentCollOp::retire() {
  active_ = false;
  base::setEmptyStatus(&status);
}

int runBlocking(MPI_Comm comm, Staging& staging, const std::function<int()>& call) {
  base::Status st = staging.stageIn();
  if (!st.isOk()) return base::raise(comm, st);
  int rc = call();
  // A call the MPI refused wrote nothing: its receive mirror holds no result (where it was not
  // copied in first, only what the pinned memory held before), so the user's buffer is left alone.
  if (rc != MPI_SUCCESS) return rc;
  st = staging.copyOut();
  if (!st.isOk()) return base::raise(comm, st);
  return rc;
}

}  // namespace cgdr::coll
