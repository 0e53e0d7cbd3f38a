#include "channel/net/net_recv.hpp"

#include <algorithm>

#include "base/log.hpp"

namespace cgdr::channel::net {

base::Result<std::unique_ptr<NetRecv>> NetRecv::create(const base::RecvArgs& a,
                                                       const mem::MemInfo& m, const base::Span& s,
                                                       MPI_Message* message) {
  std::unique_ptr<NetRecv> op(new NetRecv);
  op->args_ = a;
  op->comm = a.comm;
  auto staged = StagedSpan::make(a.buf, s, m.device);
  if (!staged.isOk()) return staged.status();
  op->staged_ = std::move(staged.value());
  if (!s.contiguous) {
    // The datatype has holes the message must not overwrite: start from the GPU's bytes.
    base::Status st = mem::copySync(op->staged_.hostStart(), op->staged_.gpuStart(), s.bytes,
                                    m.device, mem::CopyDir::kToHost);
    if (!st.isOk()) return st;
  }
  int rc = message ? PMPI_Imrecv(op->staged_.mpiBuf(), a.count, a.type, message, &op->inner_)
                   : PMPI_Irecv(op->staged_.mpiBuf(), a.count, a.type, a.peer, a.tag, a.comm,
                                &op->inner_);
  if (rc != MPI_SUCCESS) {
    op->error = rc;
    op->errorRaised = true;
    op->state_ = State::kDone;
  }
  return op;
}

// Copies what arrived back to the GPU: for a contiguous buffer only the received bytes.
bool NetRecv::startCopyBack() {
  const base::Span& s = staged_.span();
  std::size_t n = s.bytes;
  if (s.contiguous) {
    MPI_Count bytes = 0;
    if (PMPI_Get_elements_x(&status, MPI_BYTE, &bytes) == MPI_SUCCESS && bytes != MPI_UNDEFINED)
      n = std::min<std::size_t>(n, static_cast<std::size_t>(bytes));
  }
  base::Status st = copy_.start(staged_.gpuStart(), staged_.hostStart(), n, staged_.device(),
                                mem::CopyDir::kToDevice);
  if (!st.isOk()) {
    error = MPI_ERR_OTHER;
    failure = st;
    return false;
  }
  return true;
}

bool NetRecv::poll() {
  if (state_ == State::kReceiving) {
    int flag = 0;
    int rc = PMPI_Test(&inner_, &flag, &status);
    if (rc != MPI_SUCCESS) {
      error = rc;  // e.g. MPI_ERR_TRUNCATE: what fitted was received; still copy it back
      errorRaised = true;
      flag = 1;
    }
    if (!flag) return false;
    int cancelled = 0;
    PMPI_Test_cancelled(&status, &cancelled);
    if (cancelled || !startCopyBack()) {
      state_ = State::kDone;
      staged_.release();
      return true;
    }
    state_ = State::kCopying;
  }
  if (state_ == State::kCopying) {
    if (!copy_.done()) return false;
    base::Status st = copy_.wait();
    if (!st.isOk()) {
      error = MPI_ERR_OTHER;
      failure = st;
    }
    state_ = State::kDone;
    staged_.release();
  }
  return true;
}

int NetRecv::cancel() {
  if (state_ == State::kReceiving) return PMPI_Cancel(&inner_);
  return MPI_SUCCESS;
}

}  // namespace cgdr::channel::net
