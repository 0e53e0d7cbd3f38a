// Where a buffer lives.
#pragma once
#include <cstdint>

namespace cgdr::mem {

enum class MemKind : std::uint8_t { kHost, kDevice, kManaged };

// Kind of memory and, for GPU memory, the owning device ordinal.
struct MemInfo {
  MemKind kind = MemKind::kHost;
  int device = -1;
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
