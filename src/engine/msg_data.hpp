// The bytes of an engine message on each side. The sender's packed bytes sit in host memory a
// peer can copy from (the user's buffer when it is contiguous host memory; otherwise a packed or
// staged copy). The receiver's landing area is the user's buffer when it is contiguous host
// memory; otherwise bytes that finish() unpacks and/or copies to the GPU.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "base/status.hpp"
#include "channel/net/staged_span.hpp"

namespace cgdr::engine {

class SendData {
 public:
  // Classifies the buffer and makes its packed bytes available in host memory.
  static base::Result<SendData> prepare(const void* buf, int count, MPI_Datatype type);
  // Copies the bytes so the user's buffer can be reused at once (buffered sends).
  void detach();
  const char* bytes() const { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  const char* ptr_ = nullptr;
  std::size_t size_ = 0;
  std::vector<char> packed_;
  std::unique_ptr<channel::net::StagedSpan> staged_;  // only for GPU buffers
};

class RecvTarget {
 public:
  static base::Result<RecvTarget> prepare(void* buf, int count, MPI_Datatype type);
  // Packed bytes the receive can hold.
  std::size_t capacity() const { return cap_; }
  char* landing() { return land_; }
  // Delivers `received` bytes that are in landing() to the user's buffer.
  base::Status finish(std::size_t received);

 private:
  void* buf_ = nullptr;
  int count_ = 0;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  std::size_t cap_ = 0;
  std::size_t typeSize_ = 1;
  char* land_ = nullptr;
  bool direct_ = true;   // landing is the user's buffer
  bool gpu_ = false;
  bool contiguous_ = true;
  int device_ = -1;
  base::Span span_;
  std::vector<char> temp_;
  std::unique_ptr<channel::net::StagedSpan> landingStage_;  // GPU: the packed bytes, pinned
};

}  // namespace cgdr::engine
