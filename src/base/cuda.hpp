// Access to CUDA without linking the driver: whether a GPU is usable in this process, and the
// few driver-API calls cgdr needs, reached through cudaGetDriverEntryPointByVersion.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace cgdr::base::cuda {

// True when cgdr was built with CUDA, CGDR_USE_CUDA allows it, a driver loads and a GPU exists.
bool usable();
// Why usable() is false ("" when it is true).
const std::string& whyUnusable();
// Number of GPUs this process sees (0 when not usable).
int deviceCount();

// What the driver says about an address.
struct PointerAttrs {
  enum class Type { kUnknown, kHost, kDevice, kManaged } type = Type::kUnknown;
  int device = -1;                 // owning GPU ordinal for device/managed memory
  std::uint64_t bufferId = 0;      // unique per allocation, to tell a re-allocation apart
  std::uintptr_t rangeStart = 0;   // the allocation holding the address (for cuMem memory: the
  std::size_t rangeSize = 0;       //   whole reserved range, mapped or not)
};

// Asks the driver about ptr (cheap for device pointers, ~0.5 us for host pointers).
// withRange also fetches buffer id and allocation range. Returns false if the query failed.
bool queryPointer(const void* ptr, bool withRange, PointerAttrs* out);

// Where the mapping holding ptr ends (its start plus size); 0 where nothing is mapped at ptr or
// the driver cannot say. (Pieces of cuMem memory mapped back to back are one range to the driver
// but one mapping each, and a reserved range may have unmapped holes.)
std::uintptr_t mappingEnd(std::uintptr_t ptr);

// Marks the allocation holding ptr so that synchronous copies into or out of it are: a
// cudaMemcpy from pageable memory may otherwise return before its bytes land (CUDA's "API
// synchronization behavior"), and copies on other streams or in other processes would read them
// early. Marking waits for such copies still pending. False where the driver refused; nothing
// is done where CGDR_CUDA_SYNC_MEMOPS=0.
bool setSyncMemops(const void* ptr);

// The same for memory whose allocation takes no mark (the driver refuses it on cuMem memory): the
// context current in this thread (else the primary context of `device`, where one is active) is
// flagged CU_CTX_SYNC_MEMOPS (CUDA 12.1), so that the synchronous copies issued in it from then on
// are; with drainPending, the first time, it waits for the context's work, copies issued before
// the flag included. False where the driver cannot (a warning, once, names why); nothing is done
// where CGDR_CUDA_SYNC_MEMOPS=0.
bool setContextSyncMemops(int device, bool drainPending);

// The context current in this thread: its handle, its ID (cuCtxGetId, CUDA 12.0: unique for the
// process's lifetime) and its device; false where none is current or the driver cannot say.
bool currentContext(std::uintptr_t* handle, std::uint64_t* id, int* device);
// The ID of the context `handle`; false where that context was destroyed (a primary context keeps
// its handle through a reset, and the one made again takes a new ID: measured on the H200) or the
// driver cannot say. ~19 ns on the H200.
bool contextId(std::uintptr_t handle, std::uint64_t* id);

// The handle of the context current in this thread (0: none; cuCtxGetCurrent only, a read of the
// driver's thread-local state); false where the driver cannot say.
bool currentHandle(std::uintptr_t* handle);
// cuCtxPushCurrent of `handle` / cuCtxPopCurrent (the caller's context current again) and
// cuCtxSetCurrent; false where the driver refused.
bool pushContext(std::uintptr_t handle);
void popContext();
bool setCurrentContext(std::uintptr_t handle);

// Looks up a driver entry point by name (e.g. "cuMemCreate"); nullptr when absent.
void* driverEntry(const char* name, int cudaVersion = 12000);

// True if the GPU can export cuMem allocations as POSIX file descriptors (cuMem IPC across
// PID namespaces).
bool vmmFdSupported(int device);

// One-line description of the GPU (name, PCI bus id, memory) for cgdr-info.
std::string describeDevice(int device);
// Whether this process's contexts on `device` are shared through MPS (cudaDevAttrMpsEnabled): then
// the GPU work of several processes runs side by side instead of in turns (false where unknown).
bool mpsShared(int device);

}  // namespace cgdr::base::cuda
