// Where a buffer lives.
#pragma once
#include <cstddef>
#include <cstdint>

namespace cgdr::mem {

enum class MemKind : std::uint8_t { kHost, kDevice, kManaged };

// Kind of memory and, for GPU memory, the owning device ordinal and the allocation holding the
// address (as the driver reported it when the buffer was classified).
struct MemInfo {
  MemKind kind = MemKind::kHost;
  int device = -1;
  std::uint64_t bufferId = 0;  // unique per allocation (0: not known)
  std::uintptr_t base = 0;     // the allocation's start and size
  std::size_t extent = 0;
  bool onGpu() const { return kind != MemKind::kHost; }
};

inline const char* kindName(MemKind k) {
  switch (k) {
    case MemKind::kHost: return "host";
    case MemKind::kDevice: return "device";
    case MemKind::kManaged: return "managed";
  }
  return "?";
}

}  // namespace cgdr::mem
