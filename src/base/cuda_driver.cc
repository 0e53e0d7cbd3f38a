#include "base/cuda_driver.hpp"

#include "base/cuda.hpp"
#include "base/log.hpp"

namespace cgdr::base::cuda {

#if CGDR_HAVE_CUDA
namespace {

template <class F>
bool load(F& f, const char* name) {
  f = reinterpret_cast<F>(driverEntry(name));
  if (!f) CGDR_LOG(kInfo, kCuda, "driver entry point %s not found", name);
  return f != nullptr;
}

}  // namespace

const Driver* driver() {
  static const Driver* d = []() -> const Driver* {
    if (!usable()) return nullptr;
    static Driver t;
    bool ok = load(t.memCreate, "cuMemCreate") & load(t.memRelease, "cuMemRelease") &
              load(t.memAddressReserve, "cuMemAddressReserve") & load(t.memAddressFree, "cuMemAddressFree") &
              load(t.memMap, "cuMemMap") & load(t.memUnmap, "cuMemUnmap") & load(t.memSetAccess, "cuMemSetAccess") &
              load(t.memExport, "cuMemExportToShareableHandle") &
              load(t.memImport, "cuMemImportFromShareableHandle") &
              load(t.memGranularity, "cuMemGetAllocationGranularity") &
              load(t.memPropsFromHandle, "cuMemGetAllocationPropertiesFromHandle") &
              load(t.memRetainHandle, "cuMemRetainAllocationHandle") &
              load(t.memGetAddressRange, "cuMemGetAddressRange") & load(t.getErrorString, "cuGetErrorString");
    return ok ? &t : nullptr;
  }();
  return d;
}

const char* errorText(CUresult r) {
  const char* s = "unknown CUDA driver error";
  if (const Driver* d = driver(); d && d->getErrorString) d->getErrorString(r, &s);
  return s;
}
#endif

}  // namespace cgdr::base::cuda
