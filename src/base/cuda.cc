#include "base/cuda.hpp"

#include <mutex>

#include "base/config.hpp"
#include "base/log.hpp"

#if CGDR_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif

namespace cgdr::base::cuda {
namespace {

Setting<bool> gSyncMemops("CGDR_CUDA_SYNC_MEMOPS", "1", "",
                          "Mark each GPU allocation MPI sees SYNC_MEMOPS, so that a cudaMemcpy or cudaMemset into it "
                          "(which may return before its bytes land) has landed before a message reads it; for cuMem "
                          "memory (the exportable heap's too), which takes no mark, the program's context is flagged "
                          "CU_CTX_SYNC_MEMOPS instead. 0: the program synchronizes those calls itself before calling "
                          "MPI.");

ChoiceSetting gUseCuda("CGDR_USE_CUDA", "auto", {"auto", "1", "0"},
                       "GPU support: auto (on when a GPU is usable), 1 (required), 0 (off).",
                       {"MV2_USE_CUDA"});

struct State {
  bool usable = false;
  int devices = 0;
  std::string why;
};

#if CGDR_HAVE_CUDA
using PointerGetAttributesFn = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
PointerGetAttributesFn gGetAttrs = nullptr;
#endif

State detect() {
  State s;
  if (gUseCuda.get().name == "0") {
    s.why = "disabled by CGDR_USE_CUDA=0";
    return s;
  }
#if CGDR_HAVE_CUDA
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    s.why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(e);
    (void)cudaGetLastError();
  } else if (n == 0) {
    s.why = "no GPU visible to this process";
  } else {
    gGetAttrs = reinterpret_cast<PointerGetAttributesFn>(driverEntry("cuPointerGetAttributes"));
    if (!gGetAttrs) {
      s.why = "driver entry point cuPointerGetAttributes not found";
    } else {
      s.usable = true;
      s.devices = n;
    }
  }
#else
  s.why = "cgdr was built without CUDA (CGDR_WITH_CUDA=OFF)";
#endif
  if (!s.usable && gUseCuda.get().name == "1") {
    CGDR_LOG(kError, kCuda, "CGDR_USE_CUDA=1 but no GPU is usable: %s", s.why.c_str());
  }
  CGDR_LOG(kInfo, kCuda, "GPU support %s%s%s", s.usable ? "on" : "off", s.usable ? "" : ": ",
           s.why.c_str());
  return s;
}

const State& state() {
  static const State s = detect();
  return s;
}

}  // namespace

bool usable() { return state().usable; }
const std::string& whyUnusable() { return state().why; }
int deviceCount() { return state().devices; }

void* driverEntry(const char* name, int cudaVersion) {
#if CGDR_HAVE_CUDA
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult q{};
  cudaError_t e = cudaGetDriverEntryPointByVersion(name, &fn, cudaVersion, cudaEnableDefault, &q);
  if (e != cudaSuccess || q != cudaDriverEntryPointSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  return fn;
#else
  return nullptr;
#endif
}

bool queryPointer(const void* ptr, bool withRange, PointerAttrs* out) {
#if CGDR_HAVE_CUDA
  if (!usable()) return false;
  unsigned memType = 0;
  unsigned isManaged = 0;
  int ordinal = -1;
  unsigned long long bufferId = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                 CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                 CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                 CU_POINTER_ATTRIBUTE_RANGE_SIZE};
  void* data[] = {&memType, &isManaged, &ordinal, &bufferId, &start, &size};
  unsigned n = withRange ? 6 : 3;
  CUresult r = gGetAttrs(n, attrs, data, reinterpret_cast<CUdeviceptr>(ptr));
  if (r != CUDA_SUCCESS) return false;
  PointerAttrs a;
  if (isManaged) a.type = PointerAttrs::Type::kManaged;
  else if (memType == CU_MEMORYTYPE_DEVICE) a.type = PointerAttrs::Type::kDevice;
  else if (memType == CU_MEMORYTYPE_HOST) a.type = PointerAttrs::Type::kHost;
  else a.type = PointerAttrs::Type::kUnknown;  // not known to CUDA: ordinary host memory or junk
  a.device = ordinal;
  a.bufferId = bufferId;
  a.rangeStart = static_cast<std::uintptr_t>(start);
  a.rangeSize = size;
  *out = a;
  return true;
#else
  (void)ptr;
  (void)withRange;
  (void)out;
  return false;
#endif
}

bool setSyncMemops(const void* ptr) {
#if CGDR_HAVE_CUDA
  if (!gSyncMemops.get()) return true;
  using SetAttr = CUresult (*)(const void*, CUpointer_attribute, CUdeviceptr);
  static auto setAttr = reinterpret_cast<SetAttr>(driverEntry("cuPointerSetAttribute"));
  unsigned one = 1;
  return usable() && setAttr &&
         setAttr(&one, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, reinterpret_cast<CUdeviceptr>(ptr)) == CUDA_SUCCESS;
#else
  (void)ptr;
  return false;
#endif
}

#if CGDR_HAVE_CUDA
namespace {

// The driver's context calls, looked up once. Each caller checks the ones it needs: canFlag()
// for setContextSyncMemops (cuCtxSetFlags: CUDA 12.1), canSwitch() for the identity and
// push/pop/set calls (cuCtxGetId: CUDA 12.0).
struct CtxApi {
  CUresult (*getCurrent)(CUcontext*);
  CUresult (*getFlags)(unsigned*);
  CUresult (*setFlags)(unsigned);
  CUresult (*sync)();
  CUresult (*deviceGet)(CUdevice*, int);
  CUresult (*primaryState)(CUdevice, unsigned*, int*);
  CUresult (*retain)(CUcontext*, CUdevice);
  CUresult (*release)(CUdevice);
  CUresult (*push)(CUcontext);
  CUresult (*pop)(CUcontext*);
  CUresult (*getDevice)(CUdevice*);
  CUresult (*getId)(CUcontext, unsigned long long*);
  CUresult (*setCurrent)(CUcontext);

  bool canSwitch() const { return getCurrent && getDevice && getId && push && pop && setCurrent; }
  bool canFlag() const {
    return getCurrent && getFlags && setFlags && sync && deviceGet && primaryState && retain && release && push &&
           pop;
  }
};

// nullptr where the driver cannot be used.
const CtxApi* ctxApi() {
  if (!usable()) return nullptr;
  static const CtxApi f = {
      reinterpret_cast<CUresult (*)(CUcontext*)>(driverEntry("cuCtxGetCurrent")),
      reinterpret_cast<CUresult (*)(unsigned*)>(driverEntry("cuCtxGetFlags")),
      reinterpret_cast<CUresult (*)(unsigned)>(driverEntry("cuCtxSetFlags", 12010)),
      reinterpret_cast<CUresult (*)()>(driverEntry("cuCtxSynchronize")),
      reinterpret_cast<CUresult (*)(CUdevice*, int)>(driverEntry("cuDeviceGet")),
      reinterpret_cast<CUresult (*)(CUdevice, unsigned*, int*)>(driverEntry("cuDevicePrimaryCtxGetState")),
      reinterpret_cast<CUresult (*)(CUcontext*, CUdevice)>(driverEntry("cuDevicePrimaryCtxRetain")),
      reinterpret_cast<CUresult (*)(CUdevice)>(driverEntry("cuDevicePrimaryCtxRelease")),
      reinterpret_cast<CUresult (*)(CUcontext)>(driverEntry("cuCtxPushCurrent")),
      reinterpret_cast<CUresult (*)(CUcontext*)>(driverEntry("cuCtxPopCurrent")),
      reinterpret_cast<CUresult (*)(CUdevice*)>(driverEntry("cuCtxGetDevice")),
      reinterpret_cast<CUresult (*)(CUcontext, unsigned long long*)>(driverEntry("cuCtxGetId")),
      reinterpret_cast<CUresult (*)(CUcontext)>(driverEntry("cuCtxSetCurrent"))};
  return &f;
}

// The table where it has the identity and switching calls, else nullptr (checked once).
const CtxApi* switchApi() {
  const CtxApi* f = ctxApi();
  if (f == nullptr) return nullptr;
  static const bool can = f->canSwitch();
  return can ? f : nullptr;
}

// Sets CU_CTX_SYNC_MEMOPS on the current context (draining its work the first time if asked).
bool flagCurrentContext(const CtxApi& f, int device, bool drainPending) {
  unsigned flags = 0;
  if (f.getFlags(&flags) != CUDA_SUCCESS) return false;
  if (flags & CU_CTX_SYNC_MEMOPS) return true;
  if (f.setFlags(flags | CU_CTX_SYNC_MEMOPS) != CUDA_SUCCESS) return false;
  CGDR_LOG(kInfo, kCuda, "context of GPU %d flagged CU_CTX_SYNC_MEMOPS: its cudaMemcpy and cudaMemset calls now "
           "return once done", device);
  return !drainPending || f.sync() == CUDA_SUCCESS;
}

// Flags the context current in this thread, else the primary context of `device` where the
// runtime made it (none is created here).
bool flagContext(const CtxApi& f, int device, bool drainPending) {
  CUcontext ctx = nullptr;
  if (f.getCurrent(&ctx) == CUDA_SUCCESS && ctx != nullptr) return flagCurrentContext(f, device, drainPending);
  CUdevice dev = 0;
  unsigned primaryFlags = 0;
  int active = 0;
  if (device < 0 || f.deviceGet(&dev, device) != CUDA_SUCCESS ||
      f.primaryState(dev, &primaryFlags, &active) != CUDA_SUCCESS || !active || f.retain(&ctx, dev) != CUDA_SUCCESS)
    return false;
  bool ok = f.push(ctx) == CUDA_SUCCESS;
  if (ok) {
    ok = flagCurrentContext(f, device, drainPending);
    CUcontext popped = nullptr;
    f.pop(&popped);
  }
  f.release(dev);
  return ok;
}

}  // namespace
#endif

bool setContextSyncMemops(int device, bool drainPending) {
#if CGDR_HAVE_CUDA
  if (!gSyncMemops.get()) return true;
  const CtxApi* f = ctxApi();
  if (f && !f->canFlag()) f = nullptr;
  static std::mutex m;  // (one thread's read-modify-write of the flags at a time)
  std::lock_guard<std::mutex> lock(m);
  if (f && flagContext(*f, device, drainPending)) return true;
  static bool warned = false;  // (m held)
  if (!warned)
    CGDR_LOG(kWarn, kMem, "SYNC_MEMOPS not set for cuMem memory of GPU %d (%s): a cudaMemcpy or cudaMemset into such "
             "a buffer may still be landing when MPI reads it; synchronize before calling MPI", device,
             f ? "the driver refused to flag the context" : "the driver has no cuCtxSetFlags, CUDA 12.1");
  warned = true;
  return false;
#else
  (void)device;
  (void)drainPending;
  return false;
#endif
}


bool currentContext(std::uintptr_t* handle, std::uint64_t* id, int* device) {
#if CGDR_HAVE_CUDA
  const CtxApi* f = switchApi();
  CUcontext ctx = nullptr;
  CUdevice dev = -1;
  unsigned long long n = 0;
  if (!f || f->getCurrent(&ctx) != CUDA_SUCCESS || !ctx || f->getDevice(&dev) != CUDA_SUCCESS ||
      f->getId(ctx, &n) != CUDA_SUCCESS)
    return false;
  *handle = reinterpret_cast<std::uintptr_t>(ctx);
  *id = n;
  *device = static_cast<int>(dev);
  return true;
#else
  (void)handle;
  (void)id;
  (void)device;
  return false;
#endif
}

bool contextId(std::uintptr_t handle, std::uint64_t* id) {
#if CGDR_HAVE_CUDA
  const CtxApi* f = switchApi();
  unsigned long long n = 0;
  if (!f || f->getId(reinterpret_cast<CUcontext>(handle), &n) != CUDA_SUCCESS) return false;
  *id = n;
  return true;
#else
  (void)handle;
  (void)id;
  return false;
#endif
}

bool currentHandle(std::uintptr_t* handle) {
#if CGDR_HAVE_CUDA
  const CtxApi* f = switchApi();
  CUcontext ctx = nullptr;
  if (!f || f->getCurrent(&ctx) != CUDA_SUCCESS) return false;
  *handle = reinterpret_cast<std::uintptr_t>(ctx);
  return true;
#else
  (void)handle;
  return false;
#endif
}

bool pushContext(std::uintptr_t handle) {
#if CGDR_HAVE_CUDA
  const CtxApi* f = switchApi();
  return f && f->push(reinterpret_cast<CUcontext>(handle)) == CUDA_SUCCESS;
#else
  (void)handle;
  return false;
#endif
}

void popContext() {
#if CGDR_HAVE_CUDA
  CUcontext popped = nullptr;
  if (const CtxApi* f = switchApi()) f->pop(&popped);
#endif
}

bool setCurrentContext(std::uintptr_t handle) {
#if CGDR_HAVE_CUDA
  const CtxApi* f = switchApi();
  return f && f->setCurrent(reinterpret_cast<CUcontext>(handle)) == CUDA_SUCCESS;
#else
  (void)handle;
  return false;
#endif
}

std::uintptr_t mappingEnd(std::uintptr_t ptr) {
#if CGDR_HAVE_CUDA
  if (!usable()) return 0;
  int mapped = 0;
  void* start = nullptr;
  size_t size = 0;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MAPPED, CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR,
                                 CU_POINTER_ATTRIBUTE_MAPPING_SIZE};
  void* data[] = {&mapped, &start, &size};
  if (gGetAttrs(3, attrs, data, static_cast<CUdeviceptr>(ptr)) != CUDA_SUCCESS || !mapped || size == 0) return 0;
  auto s = reinterpret_cast<std::uintptr_t>(start);
  return s <= ptr && ptr - s < size ? s + size : 0;
#else
  (void)ptr;
  return 0;
#endif
}

bool vmmFdSupported(int device) {
#if CGDR_HAVE_CUDA
  if (!usable()) return false;
  using GetAttr = CUresult (*)(int*, CUdevice_attribute, CUdevice);
  static auto getAttr = reinterpret_cast<GetAttr>(driverEntry("cuDeviceGetAttribute"));
  int vmm = 0, fd = 0;
  return getAttr && getAttr(&vmm, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, device) == CUDA_SUCCESS &&
         getAttr(&fd, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, device) == CUDA_SUCCESS && vmm &&
         fd;
#else
  (void)device;
  return false;
#endif
}

bool mpsShared(int device) {
#if CGDR_HAVE_CUDA
  int v = 0;
  if (cudaDeviceGetAttribute(&v, cudaDevAttrMpsEnabled, device) != cudaSuccess) {
    (void)cudaGetLastError();  // a driver too old to say: as without MPS
    return false;
  }
  return v != 0;
#else
  (void)device;
  return false;
#endif
}

std::string describeDevice(int device) {
#if CGDR_HAVE_CUDA
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "unavailable";
  }
  char bus[32];
  snprintf(bus, sizeof bus, "%04x:%02x:%02x.0", p.pciDomainID, p.pciBusID, p.pciDeviceID);
  char uuid[64];
  const unsigned char* u = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  snprintf(uuid, sizeof uuid,
           "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
           u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
  return std::string(p.name) + " bus " + bus + " " + uuid + " sm_" + std::to_string(p.major) +
         std::to_string(p.minor) + " " + std::to_string(p.totalGlobalMem >> 20) + " MiB" +
         (mpsShared(device) ? ", shared through MPS" : ", time-sliced between processes (no MPS)");
#else
  (void)device;
  return "unavailable";
#endif
}

}  // namespace cgdr::base::cuda
