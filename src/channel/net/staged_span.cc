#include "channel/net/staged_span.hpp"

namespace cgdr::channel::net {

base::Result<StagedSpan> StagedSpan::make(const void* gpuBuf, const base::Span& s, int device) {
  StagedSpan out;
  mem::DeviceScope scope(device);  // pinned memory is allocated in the buffer's GPU context
  auto buf = mem::acquirePinned(s.bytes);
  if (!buf.isOk()) return buf.status();
  out.staging_ = std::move(buf.value());
  out.span_ = s;
  out.gpuStart_ = const_cast<char*>(static_cast<const char*>(gpuBuf) + s.lo);
  out.device_ = device;
  return out;
}

}  // namespace cgdr::channel::net
