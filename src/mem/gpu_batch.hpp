// Whether a GPU-to-GPU copy may join a window moved by the copy kernel (mem/gather.hpp), and the
// kernel's launch; GpuCopy::startMany (mem/gpu_copy.hpp) is the interface callers use.
#pragma once
#include <cstddef>
#include <cstdint>

#include "mem/gather.hpp"

namespace cgdr::mem {

// Copies of n bytes may go through the copy kernel (CGDR_CUDA_BATCH, CGDR_CUDA_BATCH_LIMIT, and
// the kernel neither failed to load nor refused this process's GPU).
bool batchable(std::size_t n);
// Launches the kernel for `a` on `stream` (a cudaStream_t of the current device); a cudaError_t.
int launchGather(const GatherArgs& a, void* stream);
// Loads both kernels into the current device's context (a kernel's first launch may otherwise load
// it while the resident kernel runs, and wait for it); a cudaError_t.
int prepareKernels();
// Launches the resident kernel (mem/gather.hpp) of generation `gen` on `stream`, every copy up to
// `seq` taken care of: `blocks` blocks, the helpers' `crew` (zeroed; null where blocks is 1) sharing
// batches with a copy over `soloBytes`, leaving where `turnNs` (0: never) passed between two of its
// looks at the box; a cudaError_t.
int launchResident(ResidentBox* box, ResidentCrew* crew, int blocks, std::uint64_t gen, std::uint64_t seq,
                   std::uint64_t idleNs, std::uint64_t lifeNs, std::uint64_t soloBytes, std::uint64_t turnNs,
                   void* stream);

}  // namespace cgdr::mem
