// The copy kernel's parameter (mem/gather_kernel.cu; host side in mem/gpu_batch.cc): a window of
// GPU-to-GPU copies moved by one kernel launch instead of one copy-engine operation each.
// A copy engine takes ~2.5 us per small copy between two GPUs and ~3.5 us where the other GPU is
// invisible to this process (a container); one launch moves 64 such copies in ~11 us in all
// (bench/vis_probe.cu `-only kbatch`, thirty-sixth session). Plain types: read by nvcc and the host compiler.
#pragma once
#include <cstdint>

namespace cgdr::mem {

struct GatherItem {
  std::uint64_t src, dst, n;
};
constexpr int kGatherMax = 64;
// `count` items; the launch's grid is count x split blocks, block (m, j) moving share j of item m
// (split from the largest item's size: mem/gpu_batch.cc).
struct GatherArgs {
  std::uint32_t count;
  GatherItem item[kGatherMax];
};

}  // namespace cgdr::mem
