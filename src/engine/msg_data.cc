#include "engine/msg_data.hpp"

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/cuda.hpp"
#include "mem/classify.hpp"
#include "mem/gpu_copy.hpp"

namespace cgdr::engine {
namespace {

constexpr const char* kHugeElement = "a datatype with holes whose one element holds more than 2 GiB";

// Whether count elements of a span can be packed (prepare() refuses the rest before any copy).
bool packable(const base::Span& s, int count) {
  return s.contiguous || s.dataBytes <= INT_MAX || s.dataBytes / static_cast<std::size_t>(count) <= INT_MAX;
}

// MPI_Pack and MPI_Unpack take int sizes: `bytes` of packed data (count elements, the packed form
// as large as the data) over INT_MAX go in batches of whole elements, each under
// INT_MAX bytes, element k lying k extents from the buffer. step(first, n, packedOffset) handles
// one batch. An element of more than INT_MAX bytes has no int form: refused.
template <class Step>
base::Status inBatches(int count, std::size_t bytes, Step&& step) {
  if (count <= 0 || bytes == 0) return base::Status::ok();
  if (bytes <= INT_MAX) return step(0, count, std::size_t{0});
  const std::size_t element = bytes / static_cast<std::size_t>(count);
  if (element > INT_MAX) return base::Status(base::Errc::kUnsupported, kHugeElement);
  const int per = static_cast<int>(INT_MAX / element);
  for (int first = 0; first < count;) {
    const int n = std::min(per, count - first);
    base::Status st = step(first, n, static_cast<std::size_t>(first) * element);
    if (!st.isOk()) return st;
    first += n;
  }
  return base::Status::ok();
}

char* element(void* buf, MPI_Datatype type, int k) {
  if (k == 0) return static_cast<char*>(buf);  // (one batch: every message under 2 GiB)
  MPI_Aint lb = 0, extent = 0;
  PMPI_Type_get_extent(type, &lb, &extent);
  return static_cast<char*>(buf) + static_cast<MPI_Aint>(k) * extent;
}

base::Status packInto(const void* buf, int count, MPI_Datatype type, std::vector<char>& out) {
  return inBatches(count, out.size(), [&](int first, int n, std::size_t off) {
    int pos = 0;
    const int room = static_cast<int>(std::min<std::size_t>(out.size() - off, INT_MAX));
    if (PMPI_Pack(element(const_cast<void*>(buf), type, first), n, type, out.data() + off, room, &pos,
                  MPI_COMM_SELF) != MPI_SUCCESS)
      return base::Status(base::Errc::kArgument, "MPI_Pack of the send buffer failed");
    return base::Status::ok();
  });
}

// Unpacks `bytes` (whole elements) from `in` into count elements at `buf`.
base::Status unpackFrom(const char* in, std::size_t bytes, void* buf, int count, MPI_Datatype type) {
  return inBatches(count, bytes, [&](int first, int n, std::size_t off) {
    int pos = 0;
    const int have = static_cast<int>(std::min<std::size_t>(bytes - off, INT_MAX));
    if (PMPI_Unpack(in + off, have, &pos, element(buf, type, first), n, type, MPI_COMM_SELF) != MPI_SUCCESS)
      return base::Status(base::Errc::kArgument, "MPI_Unpack into the receive buffer failed");
    return base::Status::ok();
  });
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
  if (!packable(d.span_, count)) return base::Status(base::Errc::kUnsupported, kHugeElement);
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
  if (!packable(t.span_, count)) return base::Status(base::Errc::kUnsupported, kHugeElement);
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
  const int elements = static_cast<int>(received / typeSize_);
  const std::size_t whole = static_cast<std::size_t>(elements) * typeSize_;
  if (!mem_.onGpu()) return unpackFrom(land_, whole, buf_, elements, type_);
  if (contiguous_) return mem::copySync(start_, land_, received, mem_.device, mem::CopyDir::kToDevice);
  // Holes keep the GPU's bytes: mirror the span, unpack into the mirror, copy it back.
  auto mirror = channel::net::StagedSpan::make(buf_, span_, mem_.device);
  if (!mirror.isOk()) return mirror.status();
  auto& mr = mirror.value();
  base::Status st = mem::copySync(mr.hostStart(), mr.gpuStart(), span_.bytes, mem_.device, mem::CopyDir::kToHost);
  if (!st.isOk()) return st;
  st = unpackFrom(land_, whole, mr.mpiBuf(), elements, type_);
  if (!st.isOk()) return st;
  return mem::copySync(mr.gpuStart(), mr.hostStart(), span_.bytes, mem_.device, mem::CopyDir::kToDevice);
}

}  // namespace cgdr::engine
