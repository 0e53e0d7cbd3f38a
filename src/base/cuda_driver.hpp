// The CUDA driver calls cgdr needs beyond the runtime, reached through
// cudaGetDriverEntryPointByVersion (never linked): cuMem (VMM) export/import and pointer ranges.
#pragma once
#include <cstddef>
#include <cstdint>

#if CGDR_HAVE_CUDA
#include <cuda.h>
#endif

namespace cgdr::base::cuda {

#if CGDR_HAVE_CUDA
struct Driver {
  CUresult (*memCreate)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long);
  CUresult (*memRelease)(CUmemGenericAllocationHandle);
  CUresult (*memAddressReserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long);
  CUresult (*memAddressFree)(CUdeviceptr, size_t);
  CUresult (*memMap)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
  CUresult (*memUnmap)(CUdeviceptr, size_t);
  CUresult (*memSetAccess)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t);
  CUresult (*memExport)(void*, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long);
  CUresult (*memImport)(CUmemGenericAllocationHandle*, void*, CUmemAllocationHandleType);
  CUresult (*memGranularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags);
  CUresult (*memPropsFromHandle)(CUmemAllocationProp*, CUmemGenericAllocationHandle);
  CUresult (*memRetainHandle)(CUmemGenericAllocationHandle*, void*);
  CUresult (*memGetAddressRange)(CUdeviceptr*, size_t*, CUdeviceptr);
  CUresult (*getErrorString)(CUresult, const char**);
};
// The driver table, or nullptr when no GPU is usable or an entry point is missing.
const Driver* driver();
// Text of a driver error.
const char* errorText(CUresult r);
#endif

}  // namespace cgdr::base::cuda
