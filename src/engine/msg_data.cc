#include "engine/msg_data.hpp"

#include <climits>
#include <cstring>

#include "base/cuda.hpp"
#include "base/dtype.hpp"
#include "mem/classify.hpp"
#include "mem/gpu_copy.hpp"

namespace cgdr::engine {
namespace {

base::Status packInto(const void* buf, int count, MPI_Datatype type, std::vector<char>& out) {
  int pos = 0;
  if (out.size() > INT_MAX) return base::Status(base::Errc::kUnsupported, "non-contiguous message over 2 GiB");
  int rc = PMPI_Pack(buf, count, type, out.data(), static_cast<int>(out.size()), &pos, MPI_COMM_SELF);
  if (rc != MPI_SUCCESS) return base::Status(base::Errc::kArgument, "MPI_Pack of the send buffer failed");
  return base::Status::ok();
}

}  // namespace

base::Result<SendData> SendData::prepare(const void* buf, int count, MPI_Datatype type) {
  SendData d;
  if (count <= 0) return d;
  base::Span s = base::spanOf(count, type);
  d.size_ = s.dataBytes;
  if (d.size_ == 0) return d;
  mem::MemInfo m;
  if (base::cuda::usable()) {
    auto c = mem::classify(base::spanStart(buf, s), s.bytes);
    if (!c.isOk()) return c.status();
    m = c.value();
  }
  if (!m.onGpu()) {
    if (s.contiguous) {
      d.ptr_ = static_cast<const char*>(base::spanStart(buf, s));
      return d;
    }
    d.packed_.resize(d.size_);
    base::Status st = packInto(buf, count, type, d.packed_);
    if (!st.isOk()) return st;
    d.ptr_ = d.packed_.data();
    return d;
  }
  auto staged = channel::net::StagedSpan::make(buf, s, m.device);
  if (!staged.isOk()) return staged.status();
  d.staged_ = std::make_unique<channel::net::StagedSpan>(std::move(staged.value()));
  base::Status st = mem::copySync(d.staged_->hostStart(), d.staged_->gpuStart(), s.bytes, m.device, mem::CopyDir::kToHost);
  if (!st.isOk()) return st;
  if (s.contiguous) {
    d.ptr_ = static_cast<const char*>(d.staged_->hostStart());
    return d;
  }
  d.packed_.resize(d.size_);
  st = packInto(d.staged_->mpiBuf(), count, type, d.packed_);
  if (!st.isOk()) return st;
  d.staged_.reset();
  d.ptr_ = d.packed_.data();
  return d;
}

void SendData::detach() {
  if (size_ == 0 || (!packed_.empty() && ptr_ == packed_.data())) return;
  packed_.assign(ptr_, ptr_ + size_);
  ptr_ = packed_.data();
  staged_.reset();
}

base::Result<RecvTarget> RecvTarget::prepare(void* buf, int count, MPI_Datatype type) {
  RecvTarget t;
  t.buf_ = buf;
  t.count_ = count;
  t.type_ = type;
  if (count <= 0) return t;
  t.span_ = base::spanOf(count, type);
  t.cap_ = t.span_.dataBytes;
  t.typeSize_ = t.cap_ > 0 ? t.cap_ / static_cast<std::size_t>(count) : 1;
  if (t.cap_ == 0) return t;
  t.contiguous_ = t.span_.contiguous;
  mem::MemInfo m;
  if (base::cuda::usable()) {
    auto c = mem::classify(base::spanStart(buf, t.span_), t.span_.bytes);
    if (!c.isOk()) return c.status();
    m = c.value();
  }
  t.gpu_ = m.onGpu();
  t.device_ = m.device;
  if (!t.gpu_ && t.contiguous_) {
    t.land_ = static_cast<char*>(const_cast<void*>(base::spanStart(buf, t.span_)));
    return t;
  }
  t.direct_ = false;
  if (!t.gpu_) {
    t.temp_.resize(t.cap_);
    t.land_ = t.temp_.data();
    return t;
  }
  base::Span packed;
  packed.bytes = t.cap_;
  packed.dataBytes = t.cap_;
  auto land = channel::net::StagedSpan::make(buf, packed, m.device);
  if (!land.isOk()) return land.status();
  t.landingStage_ = std::make_unique<channel::net::StagedSpan>(std::move(land.value()));
  t.land_ = static_cast<char*>(t.landingStage_->hostStart());
  return t;
}

base::Status RecvTarget::finish(std::size_t received) {
  if (direct_ || received == 0) return base::Status::ok();
  if (!gpu_) {
    int pos = 0;
    int elements = static_cast<int>(received / typeSize_);
    if (PMPI_Unpack(land_, static_cast<int>(received), &pos, buf_, elements, type_, MPI_COMM_SELF) != MPI_SUCCESS)
      return base::Status(base::Errc::kArgument, "MPI_Unpack into the receive buffer failed");
    return base::Status::ok();
  }
  if (contiguous_)
    return mem::copySync(const_cast<void*>(base::spanStart(buf_, span_)), land_, received, device_, mem::CopyDir::kToDevice);
  // Holes keep the GPU's bytes: mirror the span, unpack into the mirror, copy it back.
  auto mirror = channel::net::StagedSpan::make(buf_, span_, device_);
  if (!mirror.isOk()) return mirror.status();
  auto& mr = mirror.value();
  base::Status st = mem::copySync(mr.hostStart(), mr.gpuStart(), span_.bytes, device_, mem::CopyDir::kToHost);
  if (!st.isOk()) return st;
  int pos = 0;
  int elements = static_cast<int>(received / typeSize_);
  PMPI_Unpack(land_, static_cast<int>(received), &pos, mr.mpiBuf(), elements, type_, MPI_COMM_SELF);
  return mem::copySync(mr.gpuStart(), mr.hostStart(), span_.bytes, device_, mem::CopyDir::kToDevice);
}

}  // namespace cgdr::engine
