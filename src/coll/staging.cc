#include "coll/staging.hpp"

#include "mem/classify.hpp"

namespace cgdr::coll {

int Staging::add(const void* buf, const base::Span& span, Role role) {
  if (buf == MPI_IN_PLACE || span.bytes == 0 || n_ == kMaxBuffers) return -1;
  Buf& b = bufs_[n_];
  b.user = buf;
  b.span = span;
  b.role = role;
  return n_++;
}

base::Status Staging::stageIn() {
  if (!staged_) {
    for (int i = 0; i < n_; ++i) {
      Buf& b = bufs_[i];
      auto m = mem::classify(base::spanStart(b.user, b.span), b.span.bytes);
      if (!m.isOk()) return m.status();
      b.mem = m.value();
      b.gpu = b.mem.onGpu();
      if (!b.gpu) continue;
      auto s = channel::net::StagedSpan::make(b.user, b.span, b.mem.device);
      if (!s.isOk()) return s.status();
      b.staged = std::move(s.value());
      anyGpu_ = true;
    }
    staged_ = true;
  }
  for (int i = 0; i < n_; ++i) {
    Buf& b = bufs_[i];
    bool needIn = b.role != Role::kOut || !b.span.contiguous;
    if (!b.gpu || !needIn) continue;
    base::Status st = b.copy.start(b.staged.hostStart(), b.staged.gpuStart(), b.span.bytes, b.mem.device,
                                   mem::CopyDir::kToHost);
    if (!st.isOk()) return st;
  }
  for (int i = 0; i < n_; ++i) {
    base::Status st = bufs_[i].copy.wait();
    if (!st.isOk()) return st;
  }
  return base::Status::ok();
}

void* Staging::ptr(int slot) const {
  if (slot < 0) return nullptr;
  const Buf& b = bufs_[slot];
  return b.gpu ? b.staged.mpiBuf() : const_cast<void*>(b.user);
}

base::Status Staging::startCopyOut() {
  for (int i = 0; i < n_; ++i) {
    Buf& b = bufs_[i];
    if (!copiesOut(b)) continue;
    base::Status st = b.copy.start(b.staged.gpuStart(), b.staged.hostStart(), b.span.bytes, b.mem.device,
                                   mem::CopyDir::kToDevice);
    if (!st.isOk()) return st;
  }
  return base::Status::ok();
}

bool Staging::copyOutDone(base::Status* failure) {
  for (int i = 0; i < n_; ++i)
    if (!bufs_[i].copy.done()) return false;
  for (int i = 0; i < n_; ++i) {
    base::Status st = bufs_[i].copy.wait();
    if (!st.isOk()) *failure = st;
  }
  return true;
}

base::Status Staging::copyOut() {
  base::Status st = startCopyOut();
  if (!st.isOk()) return st;
  for (int i = 0; i < n_; ++i) {
    base::Status w = bufs_[i].copy.wait();
    if (!w.isOk()) return w;
  }
  return base::Status::ok();
}

}  // namespace cgdr::coll
