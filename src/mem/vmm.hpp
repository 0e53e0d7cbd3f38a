// GPU memory made with cuMemCreate that can be exported as a POSIX file descriptor (and so be
// mapped by a co-located process in any namespace), and the mapping of such memory received from
// a peer. Also: whether a user's buffer lies in such an allocation (zero-copy sharing).
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/status.hpp"

namespace cgdr::mem {

class VmmBuffer {
 public:
  VmmBuffer() = default;
  VmmBuffer(VmmBuffer&& o) noexcept { *this = std::move(o); }
  VmmBuffer& operator=(VmmBuffer&& o) noexcept;
  VmmBuffer(const VmmBuffer&) = delete;
  VmmBuffer& operator=(const VmmBuffer&) = delete;
  ~VmmBuffer() { reset(); }

  // New exportable memory on `device` of at least `bytes` (rounded to the granularity).
  static base::Result<VmmBuffer> create(int device, std::size_t bytes);
  // Maps memory a peer exported (fd of `bytes`), readable and writable from `device`. Takes
  // ownership of fd.
  static base::Result<VmmBuffer> import(int fd, std::size_t bytes, int device);
  // A new fd for the memory (the caller closes it); -1 on failure.
  int exportFd() const;
  // Lets `device` read and write the memory too (a peer GPU of the one holding it).
  base::Status allowAccess(int device) const;

  void* data() const { return reinterpret_cast<void*>(ptr_); }
  std::size_t size() const { return size_; }
  explicit operator bool() const { return ptr_ != 0; }
  void reset();

 private:
  // Maps an allocation handle (taken over) for `device`.
  static base::Result<VmmBuffer> adopt(std::uint64_t handle, std::size_t bytes, int device);
  std::uint64_t ptr_ = 0;
  std::size_t size_ = 0;
  std::uint64_t handle_ = 0;
  bool mapped_ = false;
};

// A user buffer inside an allocation exportable as a file descriptor: its base, size and an fd.
struct Exportable {
  std::uint64_t base = 0;
  std::size_t size = 0;
  int fd = -1;  // owned by the caller
};
// True (and info filled) if [p, p+n) lies in a cuMem allocation created with the POSIX-fd
// handle type; such memory can be handed to a peer without a copy.
bool exportable(const void* p, std::size_t n, Exportable* info);

// The size every cuMem mapping of GPU `device` starts and ends on a multiple of: the driver's
// minimum allocation granularity there (2 MiB on an H100), asked once; a page (4 KiB) where the
// driver cannot say (or names no power of two), which is never wrong, only slower.
std::size_t mappingGranule(int device);

}  // namespace cgdr::mem
