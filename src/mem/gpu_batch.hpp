// Whether a GPU-to-GPU copy may join a window moved by the copy kernel (mem/gather.hpp), and the
// kernel's launch; GpuCopy::startMany (mem/gpu_copy.hpp) is the interface callers use.
#pragma once
#include <cstddef>

#include "mem/gather.hpp"

namespace cgdr::mem {

// Copies of n bytes may go through the copy kernel (CGDR_CUDA_BATCH, CGDR_CUDA_BATCH_LIMIT, and
// the kernel neither failed to load nor refused this process's GPU).
bool batchable(std::size_t n);
// Launches the kernel for `a` on `stream` (a cudaStream_t of the current device); a cudaError_t.
int launchGather(const GatherArgs& a, void* stream);

}  // namespace cgdr::mem
