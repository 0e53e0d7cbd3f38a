#include "engine/msg_data.hpp"

#include <climits>
#include <cstring>

#include "base/cuda.hpp"
#include "mem/classify.hpp"
#include "mem/gpu_copy.hpp"

namespace cgdr::engine {
namespace {

base::Status packInto(const void* buf, int count, MPI_Datatype type, std::vector<char>& out) {
  int pos = 0;
  if (out.size() > INT_MAX) return base::Status(base::Errc::kUnsupported, "non-contiguous message over 2 GiB");
  if (PMPI_Pack(buf, count, type, out.data(), static_cast<int>(out.size()), &pos, MPI_COMM_SELF) != MPI_SUCCESS)
    return base::Status(base::Errc::kArgument, "MPI_Pack of the send buffer failed");
  return base::Status::ok();
}

base::Result<mem::MemInfo> where(const void* p, std::size_t n) {
  if (!n || !base::cuda::usable()) return mem::MemInfo{};
  return mem::classify(p, n);
}

}  // namespace

base::Result<SendData> SendData::prepare(const void* buf, int count, MPI_Datatype type,
                                         const std::optional<mem::MemInfo>& seen) {
  SendData d;
  if (count <= 0) return d;
  d.buf_ = buf;
  d.count_ = count;
  d.type_ = type;
  d.span_ = base::spanOf(count, type);
  d.size_ = d.span_.dataBytes;
  if (d.size_ == 0) return d;
  if (seen) {
    d.mem_ = *seen;
  } else {
    auto m = where(base::spanStart(buf, d.span_), d.span_.bytes);
    if (!m.isOk()) return m.status();
    d.mem_ = m.value();
  }
  if (d.mem_.onGpu()) {
    if (d.span_.contiguous) d.gpuPtr_ = static_cast<const char*>(base::spanStart(buf, d.span_));
    return d;
  }
  if (d.span_.contiguous) {
    d.ptr_ = static_cast<const char*>(base::spanStart(buf, d.span_));
    return d;
  }
  d.packed_.resize(d.size_);
  base::Status st = packInto(buf, count, type, d.packed_);
  if (!st.isOk()) return st;
  d.ptr_ = d.packed_.data();
  return d;
}

base::Result<const char*> SendData::hostView() {
  if (ptr_ || size_ == 0) return ptr_;
  auto staged = channel::net::StagedSpan::make(buf_, span_, mem_.device);
  if (!staged.isOk()) return staged.status();
  staged_ = std::make_unique<channel::net::StagedSpan>(std::move(staged.value()));
  base::Status st =
      mem::copySync(staged_->hostStart(), staged_->gpuStart(), span_.bytes, mem_.device, mem::CopyDir::kToHost);
  if (!st.isOk()) return st;
  if (span_.contiguous) {
    ptr_ = static_cast<const char*>(staged_->hostStart());
    return ptr_;
  }
  packed_.resize(size_);
  st = packInto(staged_->mpiBuf(), count_, type_, packed_);
  if (!st.isOk()) return st;
  staged_.reset();
  ptr_ = packed_.data();
  return ptr_;
}

base::Status SendData::detach() {
  if (size_ == 0) return base::Status::ok();
  auto v = hostView();
  if (!v.isOk()) return v.status();
  if (packed_.empty() || ptr_ != packed_.data()) packed_.assign(ptr_, ptr_ + size_);
  ptr_ = packed_.data();
  staged_.reset();
  gpuPtr_ = nullptr;
  mem_ = mem::MemInfo{};  // a host copy now
  return base::Status::ok();
}

base::Result<RecvTarget> RecvTarget::prepare(void* buf, int count, MPI_Datatype type,
                                             const std::optional<mem::MemInfo>& seen) {
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
  t.start_ = static_cast<char*>(const_cast<void*>(base::spanStart(buf, t.span_)));
  if (seen) {
    t.mem_ = *seen;
  } else {
    auto m = where(t.start_, t.span_.bytes);
    if (!m.isOk()) return m.status();
    t.mem_ = m.value();
  }
  if (!t.mem_.onGpu() && t.contiguous_) t.land_ = t.start_;
  return t;
}

char* RecvTarget::landing() {
  if (land_ || cap_ == 0) return land_;
  if (!mem_.onGpu()) {
    temp_.resize(cap_);
    land_ = temp_.data();
    return land_;
  }
  base::Span packed;
  packed.bytes = cap_;
  packed.dataBytes = cap_;
  auto land = channel::net::StagedSpan::make(buf_, packed, mem_.device);
  if (!land.isOk()) return nullptr;
  landingStage_ = std::make_unique<channel::net::StagedSpan>(std::move(land.value()));
  land_ = static_cast<char*>(landingStage_->hostStart());
  return land_;
}

base::Status RecvTarget::finish(std::size_t received, bool onHost) {
  if (!onHost || received == 0 || land_ == start_) return base::Status::ok();
  if (!mem_.onGpu()) {
    int pos = 0;
    int elements = static_cast<int>(received / typeSize_);
    if (PMPI_Unpack(land_, static_cast<int>(received), &pos, buf_, elements, type_, MPI_COMM_SELF) != MPI_SUCCESS)
      return base::Status(base::Errc::kArgument, "MPI_Unpack into the receive buffer failed");
    return base::Status::ok();
  }
  if (contiguous_) return mem::copySync(start_, land_, received, mem_.device, mem::CopyDir::kToDevice);
  // Holes keep the GPU's bytes: mirror the span, unpack into the mirror, copy it back.
  auto mirror = channel::net::StagedSpan::make(buf_, span_, mem_.device);
  if (!mirror.isOk()) return mirror.status();
  auto& mr = mirror.value();
  base::Status st = mem::copySync(mr.hostStart(), mr.gpuStart(), span_.bytes, mem_.device, mem::CopyDir::kToHost);
  if (!st.isOk()) return st;
  int pos = 0;
  int elements = static_cast<int>(received / typeSize_);
  PMPI_Unpack(land_, static_cast<int>(received), &pos, mr.mpiBuf(), elements, type_, MPI_COMM_SELF);
  return mem::copySync(mr.gpuStart(), mr.hostStart(), span_.bytes, mem_.device, mem::CopyDir::kToDevice);
}

}  // namespace cgdr::engine
