#include "mem/vmm.hpp"

#include <unistd.h>

#include <atomic>
#include <string>

#include "base/cuda_driver.hpp"
#include "base/log.hpp"
#include "mem/classify.hpp"

namespace cgdr::mem {

#if CGDR_HAVE_CUDA
namespace {

base::Status fail(const char* what, CUresult r) {
  std::string m = std::string(what) + ": " + base::cuda::errorText(r);
  CGDR_LOG(kWarn, kCuda, "%s", m.c_str());
  return base::Status(base::Errc::kCuda, m);
}

CUmemAllocationProp propsFor(int device) {
  CUmemAllocationProp p{};
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = device;
  return p;
}

base::Status grant(const base::cuda::Driver& d, CUdeviceptr va, std::size_t bytes, int device) {
  CUmemAccessDesc access{};
  access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  access.location.id = device;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  CUresult r = d.memSetAccess(va, bytes, &access, 1);
  return r == CUDA_SUCCESS ? base::Status::ok() : fail("cuMemSetAccess", r);
}

// Reserves address space, maps the handle and grants `device` read/write access.
base::Status mapInto(const base::cuda::Driver& d, CUmemGenericAllocationHandle h, std::size_t bytes, int device,
                     std::uint64_t* out) {
  CUdeviceptr va = 0;
  CUresult r = d.memAddressReserve(&va, bytes, 0, 0, 0);
  if (r != CUDA_SUCCESS) return fail("cuMemAddressReserve", r);
  r = d.memMap(va, bytes, 0, h, 0);
  if (r != CUDA_SUCCESS) {
    d.memAddressFree(va, bytes);
    return fail("cuMemMap", r);
  }
  noteGpuState();
  if (base::Status st = grant(d, va, bytes, device); !st.isOk()) {
    d.memUnmap(va, bytes);
    d.memAddressFree(va, bytes);
    return st;
  }
  *out = va;
  return base::Status::ok();
}

}  // namespace

VmmBuffer& VmmBuffer::operator=(VmmBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    ptr_ = o.ptr_;
    size_ = o.size_;
    handle_ = o.handle_;
    mapped_ = o.mapped_;
    o.ptr_ = 0;
    o.handle_ = 0;
    o.mapped_ = false;
  }
  return *this;
}

void VmmBuffer::reset() {
  const base::cuda::Driver* d = base::cuda::driver();
  if (d && mapped_) {
    d->memUnmap(ptr_, size_);
    d->memAddressFree(ptr_, size_);
  }
  if (d && handle_) d->memRelease(handle_);
  ptr_ = 0;
  handle_ = 0;
  mapped_ = false;
}

base::Result<VmmBuffer> VmmBuffer::create(int device, std::size_t bytes) {
  const base::cuda::Driver* d = base::cuda::driver();
  if (!d) return base::Status(base::Errc::kUnsupported, "no CUDA driver VMM support");
  CUmemAllocationProp p = propsFor(device);
  std::size_t gran = 0;
  CUresult r = d->memGranularity(&gran, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (r != CUDA_SUCCESS) return fail("cuMemGetAllocationGranularity", r);
  bytes = (bytes + gran - 1) / gran * gran;
  CUmemGenericAllocationHandle h = 0;
  r = d->memCreate(&h, bytes, &p, 0);
  if (r != CUDA_SUCCESS) return fail("cuMemCreate", r);
  return adopt(h, bytes, device);
}

base::Result<VmmBuffer> VmmBuffer::import(int fd, std::size_t bytes, int device) {
  const base::cuda::Driver* d = base::cuda::driver();
  if (!d) {
    close(fd);
    return base::Status(base::Errc::kUnsupported, "no CUDA driver VMM support");
  }
  CUmemGenericAllocationHandle h = 0;
  CUresult r = d->memImport(&h, reinterpret_cast<void*>(static_cast<std::uintptr_t>(fd)),
                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  close(fd);
  if (r != CUDA_SUCCESS) return fail("cuMemImportFromShareableHandle", r);
  return adopt(h, bytes, device);
}

base::Result<VmmBuffer> VmmBuffer::adopt(std::uint64_t handle, std::size_t bytes, int device) {
  VmmBuffer b;  // owns the handle from here: released if the mapping fails
  b.handle_ = handle;
  b.size_ = bytes;
  base::Status st = mapInto(*base::cuda::driver(), handle, bytes, device, &b.ptr_);
  if (!st.isOk()) return st;
  b.mapped_ = true;
  return b;
}

int VmmBuffer::exportFd() const {
  const base::cuda::Driver* d = base::cuda::driver();
  int fd = -1;
  if (!d || !handle_) return -1;
  if (d->memExport(&fd, handle_, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) != CUDA_SUCCESS) return -1;
  return fd;
}

base::Status VmmBuffer::allowAccess(int device) const {
  const base::cuda::Driver* d = base::cuda::driver();
  if (!d || !mapped_) return base::Status(base::Errc::kUnsupported, "no mapped cuMem memory");
  return grant(*d, ptr_, size_, device);
}

bool exportable(const void* p, std::size_t n, Exportable* info) {
  const base::cuda::Driver* d = base::cuda::driver();
  if (!d) return false;
  CUmemGenericAllocationHandle h = 0;
  if (d->memRetainHandle(&h, const_cast<void*>(p)) != CUDA_SUCCESS) return false;  // not cuMem memory
  CUmemAllocationProp prop{};
  bool ok = d->memPropsFromHandle(&prop, h) == CUDA_SUCCESS &&
            (prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
  CUdeviceptr base = 0;
  std::size_t size = 0;
  ok = ok && d->memGetAddressRange(&base, &size, reinterpret_cast<CUdeviceptr>(p)) == CUDA_SUCCESS &&
       reinterpret_cast<std::uint64_t>(p) + n <= base + size;
  int fd = -1;
  ok = ok && d->memExport(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0) == CUDA_SUCCESS;
  d->memRelease(h);  // the retain above took a reference
  if (!ok) return false;
  info->base = base;
  info->size = size;
  info->fd = fd;
  return true;
}

std::size_t mappingGranule(int device) {
  constexpr std::size_t kPage = 4096;
  constexpr int kDevices = 64;
  static std::atomic<std::size_t> known[kDevices];
  if (device < 0 || device >= kDevices) return kPage;
  std::size_t g = known[device].load(std::memory_order_relaxed);
  if (g) return g;
  g = kPage;
  CUmemAllocationProp p = propsFor(device);
  p.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;  // (any device memory, exportable or not)
  std::size_t q = 0;
  const base::cuda::Driver* d = base::cuda::driver();
  if (d && d->memGranularity(&q, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS && q > kPage &&
      (q & (q - 1)) == 0)
    g = q;
  CGDR_LOG(kDebug, kMem, "GPU %d: cuMem mappings start and end on multiples of %zu bytes", device, g);
  known[device].store(g, std::memory_order_relaxed);
  return g;
}

#else
VmmBuffer& VmmBuffer::operator=(VmmBuffer&&) noexcept { return *this; }
void VmmBuffer::reset() {}
base::Result<VmmBuffer> VmmBuffer::create(int, std::size_t) {
  return base::Status(base::Errc::kUnsupported, "built without CUDA");
}
base::Result<VmmBuffer> VmmBuffer::import(int fd, std::size_t, int) {
  close(fd);
  return base::Status(base::Errc::kUnsupported, "built without CUDA");
}
int VmmBuffer::exportFd() const { return -1; }
base::Status VmmBuffer::allowAccess(int) const { return base::Status(base::Errc::kUnsupported, "built without CUDA"); }
bool exportable(const void*, std::size_t, Exportable*) { return false; }
std::size_t mappingGranule(int) { return 4096; }
#endif

}  // namespace cgdr::mem
