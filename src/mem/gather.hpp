// The copy kernel's parameter (mem/gather_kernel.cu; host side in mem/gpu_batch.cc): a window of
// GPU-to-GPU copies moved by one kernel launch instead of one copy-engine operation each.
// A copy engine takes ~2.5 us per small copy between two GPUs and ~3.5 us where the other GPU is
// invisible to this process (a container); one launch moves 64 such copies in ~11 us in all
// (bench/vis_probe/ `-only kbatch`, thirty-sixth session). Plain types: read by nvcc and the host compiler.
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

// The resident copy kernel (cgdr_resident in mem/gather_kernel.cu; host side in mem/resident.cc):
// one block that stays on its GPU between messages and copies what the CPU posts to it through
// mapped host memory, so that a lone small message costs a few stores instead of a copy-engine
// operation's issue (1.5-3.5 us of CPU time) and wait (bench/vis_probe/ `-only spin`, forty-
// seventh session: an 8-byte ping-pong hop between two GPUs 6.1-6.6 us against 8.3-11.0 on the
// copy engine on two H200s). The CPU writes slot[k % kResidentSlots] and then `ring` = k; the
// kernel copies every posted message in order, fences to system scope, writes `done`, and leaves
// when for its idle time neither a message came nor `keep` changed (the CPU changes it while its
// process waits in MPI) or when it has run its lifetime, writing `exited` = its generation last
// (after which it reads nothing more). A slot may name a flag: a word of mapped host memory
// (e.g. a peer's shared segment) that the kernel sets to `value` after the copy's fence and
// before `done`, so that another process learns of the copy without this CPU in between.
constexpr int kResidentSlots = 64;
constexpr int kResidentThreads = 128;
// `keep` set to this: leave once every message posted is taken (the process is about to wait for
// the whole GPU: cudaDeviceSynchronize, cudaFree); the CPU sets it to 0 before each launch.
constexpr std::uint64_t kResidentLeave = ~0ull;
struct ResidentBox {
  std::uint64_t ring;  // CPU: the last message posted
  std::uint64_t keep;  // CPU: changed while the process is in MPI (read with `ring`: one 16-byte load)
  std::uint64_t pad0[6];
  std::uint64_t started;  // kernel: the generation that runs (written when it starts)
  std::uint64_t done;     // kernel: every message up to this one copied and fenced
  std::uint64_t exited;   // kernel: the generation that left (written after its last `done`)
  std::uint64_t crewed;   // kernel: batches it shared with its helpers (ResidentCrew; CPU: zeroed before a launch)
  // kernel, written before `exited`: the longest time between two of its looks at `ring` (ns), and
  // that time where it left because it exceeded the limit it was given (its context was switched
  // out: the GPU runs another process's work in turns with it), else 0; 1 where it left because
  // `keep` said kResidentLeave, else 0
  std::uint64_t longest;
  std::uint64_t turned;
  std::uint64_t asked;
  std::uint64_t pad1[1];
  struct Slot {
    GatherItem item;
    std::uint64_t flag;  // device address of the flag (0: none)
    std::uint64_t value;
    std::uint64_t pad[3];  // one cache line: read by one warp load
  } slot[kResidentSlots];
};
static_assert(sizeof(ResidentBox::Slot) == 64);

// A resident kernel of more than one block (CGDR_CUDA_RESIDENT_BLOCKS): block 0 (the leader) reads
// the box as above and alone copies batches whose largest message is at most CGDR_CUDA_RESIDENT_SOLO
// bytes (sharing costs a few round trips through the GPU's L2); a larger batch it shares with the
// blocks that have joined (the helpers), each copying its part of every message, and it writes the flags and
// `done` once every part arrived. Device memory of the GPU, zeroed before each launch: helpers
// poll it on the GPU (not host memory over PCIe). Only the leader leaves by idle time or
// lifetime, and tells the helpers so.
constexpr int kResidentMaxBlocks = 32;
constexpr std::uint64_t kCrewLeave = ~0ull;
struct ResidentCrew {
  std::uint64_t joined;  // helpers started: each took the next number (1, 2, ...)
  std::uint64_t pad0[15];
  // leader: batch number << 16 | its messages << 8 | parts (the leader's and helpers 1 .. parts - 1),
  // written after the messages; kCrewLeave
  std::uint64_t batch;
  std::uint64_t pad1[15];
  std::uint64_t arrived;  // helpers: parts copied and fenced, all batches
  std::uint64_t pad2[15];
  GatherItem item[kResidentSlots];
};

}  // namespace cgdr::mem
