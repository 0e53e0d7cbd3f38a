// Error results used inside cgdr; the interposition layer turns them into MPI error codes.
#pragma once
#include <string>
#include <utility>

namespace cgdr::base {

// What went wrong, coarse enough to map onto an MPI error class.
enum class Errc {
  kOk,
  kInvalidBuffer,   // a pointer that is neither host memory nor a live GPU allocation
  kBufferOverrun,   // a GPU buffer whose count runs past the end of its allocation
  kBufferHole,      // a GPU buffer whose count runs into an unmapped part of its reserved range
  kCuda,            // a CUDA call failed
  kNoMemory,        // staging or shared memory could not be allocated
  kSystem,          // a system call failed
  kUnsupported,     // the request is valid MPI but cgdr cannot serve it
  kPeerLost,        // a co-located peer vanished mid-transfer
  kProtocol,        // a peer sent something that failed validation
  kArgument,        // bad argument detected by cgdr
  kTruncate,        // a message longer than the receive buffer (MPI_ERR_TRUNCATE)
  kGpuReset,        // GPU memory after the program's cudaDeviceReset (cgdr's GPU state is gone)
};

// A cheap, [[nodiscard]] status: a code plus a message naming the cause.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Errc code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return {}; }
  bool isOk() const { return code_ == Errc::kOk; }
  Errc code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  Errc code_ = Errc::kOk;
  std::string message_;
};

// A value or the Status that explains why there is none.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status status) : status_(std::move(status)) {}
  bool isOk() const { return status_.isOk(); }
  const Status& status() const { return status_; }
  T& value() { return value_; }
  const T& value() const { return value_; }

 private:
  T value_{};
  Status status_;
};

}  // namespace cgdr::base
