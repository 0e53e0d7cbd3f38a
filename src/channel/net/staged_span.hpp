// A host mirror of a GPU buffer's covered bytes in pinned staging memory, laid out so that the
// real MPI can be handed (mirror, count, datatype) exactly as it would be handed the GPU buffer.
#pragma once
#include "base/dtype.hpp"
#include "base/status.hpp"
#include "mem/gpu_copy.hpp"
#include "mem/memtype.hpp"
#include "mem/pinned_pool.hpp"

namespace cgdr::channel::net {

class StagedSpan {
 public:
  StagedSpan() = default;
  // Borrows staging for span s of the GPU buffer `gpuBuf` on `device`.
  static base::Result<StagedSpan> make(const void* gpuBuf, const base::Span& s, int device);

  // The pointer to give the real MPI in place of the GPU buffer pointer.
  void* mpiBuf() const { return static_cast<char*>(staging_.data()) - span_.lo; }
  void* hostStart() const { return staging_.data(); }
  void* gpuStart() const { return gpuStart_; }
  const base::Span& span() const { return span_; }
  int device() const { return device_; }
  void release() { staging_.release(); }

 private:
  mem::PinnedBuffer staging_;
  base::Span span_;
  void* gpuStart_ = nullptr;
  int device_ = -1;
};

}  // namespace cgdr::channel::net
