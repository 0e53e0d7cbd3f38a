// Staging of a collective's (or pack call's) buffers: GPU buffers are mirrored in pinned host
// memory with the same layout, inputs copied in before the real MPI runs, outputs copied back
// after it. Host buffers pass through untouched.
#pragma once
#include <array>

#include "base/dtype.hpp"
#include "base/status.hpp"
#include "channel/net/staged_span.hpp"
#include "mem/gpu_copy.hpp"
#include "mem/memtype.hpp"

namespace cgdr::coll {

enum class Role { kIn, kOut, kInOut };

class Staging {
 public:
  static constexpr int kMaxBuffers = 2;

  // Adds a significant buffer (MPI_IN_PLACE and empty spans are ignored); returns its slot.
  int add(const void* buf, const base::Span& span, Role role);
  // Classifies the buffers, borrows staging for GPU ones and copies their inputs to the host
  // (outputs with holes too, so the holes keep their bytes). Call again to refresh the inputs
  // of a persistent operation; staging is kept.
  base::Status stageIn();
  // The bytes a slot covers (its plan's span).
  const base::Span& span(int slot) const { return bufs_[slot].span; }
  // True if some buffer is GPU memory (only meaningful after stageIn).
  bool any() const { return anyGpu_; }
  // The pointer to give the real MPI for a slot: the user's, or its staged mirror.
  void* ptr(int slot) const;
  // Copies outputs back to the GPU: blocking, or started and then polled.
  base::Status copyOut();
  base::Status startCopyOut();
  bool copyOutDone(base::Status* failure);

 private:
  struct Buf {
    const void* user = nullptr;
    base::Span span;
    Role role = Role::kIn;
    mem::MemInfo mem;
    channel::net::StagedSpan staged;
    mem::GpuCopy copy;
    bool gpu = false;
  };
  bool copiesOut(const Buf& b) const { return b.gpu && b.role != Role::kIn; }

  std::array<Buf, kMaxBuffers> bufs_;
  int n_ = 0;
  bool anyGpu_ = false;
  bool staged_ = false;
};

}  // namespace cgdr::coll
