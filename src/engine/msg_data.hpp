// The bytes of an engine message on each side. The sender's data stays where it is: host
// memory is read directly (packed first if it has holes); GPU memory is offered to the receiver
// as is and copied to host memory only if the chosen channel needs it (hostView()). The
// receiver's bytes land in the user's buffer when it is contiguous (host or GPU, depending on
// the channel), otherwise in a landing area that finish() unpacks and/or copies to the GPU.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "base/dtype.hpp"
#include "base/status.hpp"
#include "channel/net/staged_span.hpp"
#include "mem/memtype.hpp"

namespace cgdr::engine {

class SendData {
 public:
  // `seen`: the classification of the buffer's span, where the caller already has it.
  static base::Result<SendData> prepare(const void* buf, int count, MPI_Datatype type,
                                        const std::optional<mem::MemInfo>& seen = std::nullopt);
  // Copies the bytes so the user's buffer can be reused at once (buffered sends).
  base::Status detach();
  std::size_t size() const { return size_; }
  const mem::MemInfo& mem() const { return mem_; }
  bool contiguous() const { return span_.contiguous; }
  // The packed bytes in host memory (GPU data is copied to host memory on the first call).
  base::Result<const char*> hostView();
  // The GPU bytes (GPU source, contiguous), for channels that copy GPU to GPU.
  const char* gpuData() const { return gpuPtr_; }

 private:
  const void* buf_ = nullptr;
  int count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  base::Span span_;
  mem::MemInfo mem_;
  std::size_t size_ = 0;
  const char* ptr_ = nullptr;     // host view, once there is one
  const char* gpuPtr_ = nullptr;  // GPU source, contiguous
  std::vector<char> packed_;
  std::unique_ptr<channel::net::StagedSpan> staged_;
};

class RecvTarget {
 public:
  static base::Result<RecvTarget> prepare(void* buf, int count, MPI_Datatype type,
                                          const std::optional<mem::MemInfo>& seen = std::nullopt);
  // Packed bytes the receive can hold.
  std::size_t capacity() const { return cap_; }
  bool gpu() const { return mem_.onGpu(); }
  int device() const { return mem_.device; }
  const mem::MemInfo& mem() const { return mem_; }
  bool contiguous() const { return contiguous_; }
  // The contiguous destination itself (GPU or host memory), when there is one.
  char* direct() const { return contiguous_ ? start_ : nullptr; }
  // Host bytes to write the message into (the user's buffer for contiguous host memory).
  char* landing();
  // Delivers `received` bytes from landing() (onHost) or already at direct() (!onHost).
  base::Status finish(std::size_t received, bool onHost = true);

 private:
  void* buf_ = nullptr;
  int count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::size_t cap_ = 0;
  std::size_t typeSize_ = 1;
  char* start_ = nullptr;
  char* land_ = nullptr;
  mem::MemInfo mem_;  // of the buffer's span
  bool contiguous_ = true;
  base::Span span_;
  std::vector<char> temp_;
  std::unique_ptr<channel::net::StagedSpan> landingStage_;  // GPU: the packed bytes, pinned
};

}  // namespace cgdr::engine
