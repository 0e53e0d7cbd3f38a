#include "channel/net/net_send.hpp"

#include "base/log.hpp"
#include "channel/net/send_order.hpp"

namespace cgdr::channel::net {

base::Result<std::unique_ptr<NetSend>> NetSend::create(const base::SendArgs& a,
                                                      const mem::MemInfo& m,
                                                      const base::Span& s) {
  std::unique_ptr<NetSend> op(new NetSend);
  op->args_ = a;
  op->comm = a.comm;
  op->onGpu_ = m.onGpu() && s.bytes > 0;
  if (op->onGpu_) {
    auto staged = StagedSpan::make(a.buf, s, m.device);
    if (!staged.isOk()) return staged.status();
    op->staged_ = std::move(staged.value());
    base::Status st = op->copy_.start(op->staged_.hostStart(), op->staged_.gpuStart(), s.bytes,
                                      m.device, mem::CopyDir::kToHost);
    if (!st.isOk()) return st;
  }
  send_order::enqueue(op.get());
  send_order::drain(a.comm, a.peer);
  return op;
}

NetSend::~NetSend() {
  if (state_.load() == State::kQueued) (void)send_order::remove(this);
}

bool NetSend::copyDone() { return copy_.done(); }
void NetSend::copyWait() { (void)copy_.wait(); }

void NetSend::post() {
  base::Status st = copy_.wait();  // already finished; collects a copy error
  if (!st.isOk()) {
    error = MPI_ERR_OTHER;
    failure = st;
    state_.store(State::kDone, std::memory_order_release);
    return;
  }
  const void* buf = onGpu_ ? staged_.mpiBuf() : args_.buf;
  int rc = base::pmpiIsend(args_.mode, buf, args_.count, args_.type, args_.peer, args_.tag,
                           args_.comm, &inner_);
  if (rc != MPI_SUCCESS) {
    error = rc;
    errorRaised = true;
    state_.store(State::kDone, std::memory_order_release);
    return;
  }
  // A buffered send has copied the data into the attached buffer already.
  if (args_.mode == base::SendMode::kBuffered) staged_.release();
  state_.store(State::kPosted, std::memory_order_release);
}

void NetSend::finish() {
  staged_.release();
  state_.store(State::kDone, std::memory_order_release);
}

bool NetSend::poll() {
  State s = state_.load(std::memory_order_acquire);
  if (s == State::kQueued) {
    send_order::drain(args_.comm, args_.peer);
    s = state_.load(std::memory_order_acquire);
  }
  if (s == State::kPosted) {
    int flag = 0;
    int rc = PMPI_Test(&inner_, &flag, &status);
    if (rc != MPI_SUCCESS) {
      error = rc;
      errorRaised = true;
      flag = 1;
    }
    if (!flag) return false;
    finish();
    return true;
  }
  return s == State::kDone;
}

int NetSend::cancel() {
  if (send_order::remove(this)) {
    copyWait();
    PMPI_Status_set_cancelled(&status, 1);
    finish();
    return MPI_SUCCESS;
  }
  if (state_.load() == State::kPosted) return PMPI_Cancel(&inner_);
  return MPI_SUCCESS;
}

}  // namespace cgdr::channel::net
