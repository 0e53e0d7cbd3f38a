#include "engine/held.hpp"

#include "base/errors.hpp"
#include "engine/p2p.hpp"
#include "engine/shm_engine.hpp"

namespace cgdr::engine {

HeldRecv::HeldRecv(ShmEngine& e, const base::RecvArgs& a) : e_(e), args_(a) {
  comm = a.comm;
  base::setEmptyStatus(&status);
  e_.addPending(1);
}

HeldRecv::~HeldRecv() {
  std::lock_guard lock(e_.mutex());
  e_.dropFromOrder(this);
  if (!released_ && !cancelled_) e_.addPending(-1);
}

void HeldRecv::release() {
  if (released_ || cancelled_) return;
  released_ = true;
  e_.addPending(-1);
  auto op = makeRealRecv(args_);
  if (op.isOk()) {
    real_ = std::move(op.value());
  } else {
    error = MPI_ERR_OTHER;
    failure = op.status();
  }
}

bool HeldRecv::poll() {
  std::lock_guard lock(e_.mutex());
  if (cancelled_) return true;
  if (!released_) {
    e_.progress();
    if (!released_) return false;
  }
  if (!real_) return true;  // releasing failed: error is set
  if (!real_->poll()) return false;
  status = real_->status;
  error = real_->error;
  errorRaised = real_->errorRaised;
  failure = real_->failure;
  return true;
}

int HeldRecv::cancel() {
  std::lock_guard lock(e_.mutex());
  if (released_) return real_ ? real_->cancel() : MPI_SUCCESS;
  if (!cancelled_) {
    cancelled_ = true;
    e_.addPending(-1);
    e_.dropFromOrder(this);
    PMPI_Status_set_cancelled(&status, 1);
  }
  return MPI_SUCCESS;
}

}  // namespace cgdr::engine
