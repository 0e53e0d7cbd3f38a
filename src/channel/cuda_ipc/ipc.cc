#include "channel/cuda_ipc/ipc.hpp"

#include <cstring>

#include "base/cuda.hpp"
#include "base/log.hpp"
#include "mem/classify.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::channel::cuda_ipc {

#if CGDR_HAVE_CUDA
bool exportHandle(const base::cuda::PointerAttrs& a, const void* p, std::size_t n, Handle* out) {
  if (a.type != base::cuda::PointerAttrs::Type::kDevice || !a.rangeStart) return false;
  auto addr = reinterpret_cast<std::uintptr_t>(p);
  if (addr < a.rangeStart || addr + n > a.rangeStart + a.rangeSize) return false;
  cudaIpcMemHandle_t h;
  if (cudaIpcGetMemHandle(&h, reinterpret_cast<void*>(a.rangeStart)) != cudaSuccess) {
    (void)cudaGetLastError();  // e.g. cuMem memory: not for legacy IPC
    return false;
  }
  std::memcpy(out->bytes, &h, sizeof h);
  out->base = a.rangeStart;
  out->offset = addr - a.rangeStart;
  out->bufferId = a.bufferId;
  return true;
}

void* Cache::open(int peer, const Handle& h) {
  std::lock_guard lock(mutex_);
  auto key = std::make_pair(peer, h.base);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    if (it->second.bufferId == h.bufferId) return static_cast<char*>(it->second.base) + h.offset;
    cudaIpcCloseMemHandle(it->second.base);  // freed and allocated again: never reach stale memory
    entries_.erase(it);
  }
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, h.bytes, sizeof handle);
  void* base = nullptr;
  cudaError_t e = cudaIpcOpenMemHandle(&base, handle, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    CGDR_LOG(kWarn, kCuda, "cudaIpcOpenMemHandle from rank %d: %s", peer, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return nullptr;
  }
  mem::noteGpuState();
  entries_[key] = {h.bufferId, base};
  return static_cast<char*>(base) + h.offset;
}

void Cache::closeAll() {
  std::lock_guard lock(mutex_);
  for (auto& [k, e] : entries_) cudaIpcCloseMemHandle(e.base);
  entries_.clear();
}
#else
bool exportHandle(const base::cuda::PointerAttrs&, const void*, std::size_t, Handle*) { return false; }
void* Cache::open(int, const Handle&) { return nullptr; }
void Cache::closeAll() {}
#endif

}  // namespace cgdr::channel::cuda_ipc
