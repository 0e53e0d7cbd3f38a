// One request for a receive and a send made together (MPI_Isendrecv, MPI_Isendrecv_replace),
// complete when both are. Its status is the receive's; its error the receive's, or the send's
// where only the send failed (where both failed, the send's is raised on its communicator as the
// pair completes, as the blocking MPI_Sendrecv raises both).
#pragma once
#include <memory>
#include <utility>

#include "base/errors.hpp"
#include "base/op.hpp"

namespace cgdr::engine {

// `Keep` is whatever the send reads from that must live until it completes (the copy of a
// replaced buffer).
template <class Keep>
class PairOp final : public base::Op {
 public:
  PairOp(std::unique_ptr<base::Op> recv, std::unique_ptr<base::Op> send, Keep keep, MPI_Comm c)
      : recv_(std::move(recv)), send_(std::move(send)), keep_(std::move(keep)) {
    comm = c;
  }
  bool poll() override {
    if (!recvDone_) recvDone_ = recv_->poll();
    if (!sendDone_) sendDone_ = send_->poll();
    if (!recvDone_ || !sendDone_) return false;
    if (!settled_) settle();
    return true;
  }
  int cancel() override {
    int rc = recvDone_ ? MPI_SUCCESS : recv_->cancel();
    int rs = sendDone_ ? MPI_SUCCESS : send_->cancel();
    return rc != MPI_SUCCESS ? rc : rs;
  }

 private:
  void settle() {
    settled_ = true;
    status = recv_->status;
    bool recvFailed = recv_->error != MPI_SUCCESS;
    if (recvFailed && send_->error != MPI_SUCCESS)
      (void)base::settleError(send_->comm, send_->error, send_->errorRaised, send_->failure);
    const base::Op& from = recvFailed || send_->error == MPI_SUCCESS ? *recv_ : *send_;
    error = from.error;
    errorRaised = from.errorRaised;
    failure = from.failure;
  }

  std::unique_ptr<base::Op> recv_, send_;
  Keep keep_;
  bool recvDone_ = false, sendDone_ = false, settled_ = false;
};

}  // namespace cgdr::engine
