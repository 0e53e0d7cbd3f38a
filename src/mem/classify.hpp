// Memory-type classification of the buffers handed to MPI.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/status.hpp"
#include "mem/memtype.hpp"

namespace cgdr::mem {

// Classifies [p, p+n): host, device or managed, and which GPU. Host pointers are answered from
// the host-range cache after their first query. A pointer that is neither host memory nor a live
// GPU allocation (a freed or foreign device pointer) is an error naming the address, and so is a
// GPU buffer whose n bytes run past its allocation's end or into an unmapped hole of its range.
base::Result<MemInfo> classify(const void* p, std::size_t n);

// The program reset a GPU (cudaDeviceReset, interposed in interpose/cuda_alloc.cc): the primary
// context cgdr shares with the program is gone, and with it what cgdr made in it - streams,
// events, page-locked chunks, mappings of peers' memory and of its heap, the resident kernel's
// mailbox - which no later message may use. If cgdr had made any (noteGpuState, called where each
// is made), classify refuses every GPU buffer of this process from then on (kGpuReset) instead of
// moving it through that state (which crashed or corrupted data), and the resident kernels'
// mailboxes are forgotten; noteGpuReset says whether this call did that. A reset before cgdr made
// anything (a program resetting its GPU at start-up) changes nothing, and one just before
// MPI_Finalize - as CUDA's samples do - leaves nothing to refuse.
// (Process-wide: a reset of one GPU ends cgdr's use of all of them. This process's host buffers
// still exchange with a peer's GPU buffers: the engine then leaves the GPU copies to the peer.)
void noteGpuState();
bool noteGpuReset();
bool gpuResetSeen();
// The same for a reset cgdr does not interpose - the cudaDeviceReset of a statically linked CUDA
// runtime (nvcc's default), the driver's cuDevicePrimaryCtxReset, cuCtxDestroy of a context of the
// program's own that held cgdr's GPU state - found afterwards: noteGpuState also takes the ID of the
// context it was called in (per device, the first), and a context whose ID changed or that is gone
// is one that was reset (a cuCtxGetId per such device, ~19 ns on the H200; on a destroyed context it
// answers CONTEXT_IS_DESTROYED, or a new context's ID where the driver reused the handle: measured).
// (One context per device is enough: cgdr makes all its state of a device in that one,
// workContext.) True once any reset was seen; the first time it marks the state gone as
// noteGpuReset does (gpuResetSeen() holds from then on) and logs it. Asked where a GPU buffer is
// classified, where a message from a peer's GPU buffer arrives, where cgdr would next touch its GPU
// state at all (the resident kernels' mailboxes, draining its streams at the end) and by the
// exportable heap.
bool gpuStateLost();
// The context cgdr works in on `device` (its handle; 0 where cgdr made no GPU state there yet): the
// one current when it first did. DeviceScope makes it current for each of cgdr's GPU calls, so that
// a context of the program's own, current at the time, neither holds cgdr's streams, events,
// page-locked memory or mappings (a cuCtxDestroy of it would take them) nor mixes its objects with
// theirs (an event of one context cannot be recorded on another's stream).
std::uintptr_t workContext(int device);

// True if the bytes [p, p+n) can be read by the CPU (checks the first and the last byte).
bool cpuReadable(const void* p, std::size_t n);

}  // namespace cgdr::mem
