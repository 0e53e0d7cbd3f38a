#include "mem/gpu_copy.hpp"

#include <mutex>
#include <string>
#include <vector>

#include "base/cuda.hpp"
#include "base/log.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::mem {

#if CGDR_HAVE_CUDA
namespace {

constexpr int kMaxDevices = 64;

struct Streams {
  std::mutex mutex;
  cudaStream_t s[kMaxDevices][4] = {};
  std::vector<cudaEvent_t> events;
};

Streams& streams() {
  static Streams* s = new Streams;  // outlives static destructors; the driver cleans up at exit
  return *s;
}

base::Status cudaFail(const char* what, cudaError_t e) {
  (void)cudaGetLastError();
  std::string m = std::string(what) + ": " + cudaGetErrorString(e);
  CGDR_LOG(kError, kCuda, "%s", m.c_str());
  return base::Status(base::Errc::kCuda, m);
}

int normalize(int device) {
  if (device >= 0 && device < kMaxDevices) return device;
  int cur = 0;
  cudaGetDevice(&cur);
  return cur;
}

// The stream for (device, direction); created on first use with the device current.
base::Result<cudaStream_t> streamFor(int device, CopyDir dir) {
  Streams& st = streams();
  std::lock_guard lock(st.mutex);
  cudaStream_t& s = st.s[device][static_cast<int>(dir)];
  if (!s) {
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e != cudaSuccess) return cudaFail("cudaStreamCreateWithFlags", e);
  }
  return s;
}

base::Result<cudaEvent_t> takeEvent() {
  Streams& st = streams();
  {
    std::lock_guard lock(st.mutex);
    if (!st.events.empty()) {
      cudaEvent_t e = st.events.back();
      st.events.pop_back();
      return e;
    }
  }
  cudaEvent_t ev;
  cudaError_t e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  if (e != cudaSuccess) return cudaFail("cudaEventCreate", e);
  return ev;
}

void giveEvent(cudaEvent_t ev) {
  Streams& st = streams();
  std::lock_guard lock(st.mutex);
  st.events.push_back(ev);
}

}  // namespace

DeviceScope::DeviceScope(int device) {
  if (device < 0 || cudaGetDevice(&saved_) != cudaSuccess) {
    saved_ = -1;
    return;
  }
  if (saved_ == device) saved_ = -1;
  else cudaSetDevice(device);
}

DeviceScope::~DeviceScope() {
  if (saved_ >= 0) cudaSetDevice(saved_);
}

GpuCopy& GpuCopy::operator=(GpuCopy&& o) noexcept {
  if (this != &o) {
    if (event_) (void)wait();
    event_ = o.event_;
    error_ = std::move(o.error_);
    o.event_ = nullptr;
  }
  return *this;
}

GpuCopy::~GpuCopy() {
  if (event_) (void)wait();
}

base::Status GpuCopy::start(void* dst, const void* src, std::size_t n, int device, CopyDir dir) {
  if (n == 0) return base::Status::ok();
  device = normalize(device);
  DeviceScope scope(device);
  auto s = streamFor(device, dir);
  if (!s.isOk()) return s.status();
  auto ev = takeEvent();
  if (!ev.isOk()) return ev.status();
  cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s.value());
  if (e != cudaSuccess) {
    giveEvent(ev.value());
    return cudaFail(dir == CopyDir::kToHost ? "copy from GPU" : dir == CopyDir::kToDevice ? "copy to GPU" : "GPU to GPU copy", e);
  }
  e = cudaEventRecord(ev.value(), s.value());
  if (e != cudaSuccess) {
    giveEvent(ev.value());
    return cudaFail("cudaEventRecord", e);
  }
  event_ = ev.value();
  return base::Status::ok();
}

bool GpuCopy::done() {
  if (!event_) return true;
  cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (e == cudaErrorNotReady) return false;
  if (e != cudaSuccess) error_ = cudaFail("copy", e);
  giveEvent(static_cast<cudaEvent_t>(event_));
  event_ = nullptr;
  return true;
}

base::Status GpuCopy::wait() {
  if (event_) {
    cudaError_t e = cudaEventSynchronize(static_cast<cudaEvent_t>(event_));
    if (e != cudaSuccess) error_ = cudaFail("copy", e);
    giveEvent(static_cast<cudaEvent_t>(event_));
    event_ = nullptr;
  }
  return error_;
}

base::Status copySync(void* dst, const void* src, std::size_t n, int device, CopyDir dir) {
  GpuCopy c;
  base::Status s = c.start(dst, src, n, device, dir);
  if (!s.isOk()) return s;
  return c.wait();
}

#else  // host-only build: no GPU memory can exist, so no copy is ever asked for.

DeviceScope::DeviceScope(int) {}
DeviceScope::~DeviceScope() {}
GpuCopy& GpuCopy::operator=(GpuCopy&& o) noexcept {
  error_ = std::move(o.error_);
  return *this;
}
GpuCopy::~GpuCopy() {}
base::Status GpuCopy::start(void*, const void*, std::size_t n, int, CopyDir) {
  if (n == 0) return base::Status::ok();
  return base::Status(base::Errc::kUnsupported, "GPU copy in a build without CUDA");
}
bool GpuCopy::done() { return true; }
base::Status GpuCopy::wait() { return error_; }
base::Status copySync(void*, const void*, std::size_t n, int, CopyDir) {
  if (n == 0) return base::Status::ok();
  return base::Status(base::Errc::kUnsupported, "GPU copy in a build without CUDA");
}

#endif

}  // namespace cgdr::mem
