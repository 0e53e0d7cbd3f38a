// The resident copy kernel's host side (device code: cgdr_resident in mem/gather_kernel.cu, its
// mailbox mem/gather.hpp): per GPU, one block (and its helpers: CGDR_CUDA_RESIDENT_BLOCKS) that
// stays on the GPU while lone small GPU-to-GPU copies come often and takes each through a few
// stores to mapped host memory, instead of a copy-engine operation's issue and wait.
// GpuCopy::start (mem/gpu_copy.hpp) uses it for copies whose caller says the GPU's SMs reach
// both sides and that the other side is on another GPU.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/status.hpp"

namespace cgdr::mem {

// A word of mapped host memory that the copy sets to `value` once its bytes are fenced to system
// scope (another process polls it): `host` for this CPU, `device` for the GPU.
struct DoneFlag {
  std::uint64_t* host = nullptr;
  std::uint64_t device = 0;
  std::uint64_t value = 0;
  bool usable() const { return host && device; }
};

// Copies of n bytes may go to the resident kernel (CGDR_CUDA_RESIDENT, CGDR_CUDA_RESIDENT_LIMIT;
// nothing refused it on this process's GPUs).
bool residentFits(std::size_t n);
// Posts the copy to `device`'s resident kernel where it runs and has room: its number there (> 0);
// else 0, nothing posted. Where the kernel was launched but has not started, waits for its start
// up to CGDR_CUDA_RESIDENT_START_WAIT after the launch. Where the kernel does not run and such copies came less than 100 us
// apart, marks it wanted: residentWake starts it. `flag` (optional): set once the copy is done, by
// the kernel, or here where the copy is made on the copy engine after the kernel left without it
// (a copy that fails leaves it alone).
std::uint64_t residentPost(int device, void* dst, const void* src, std::size_t n, const DoneFlag* flag = nullptr);
// Starts `device`'s kernel where residentPost found it wanted (called after the copy that went to
// the copy engine instead was issued, so the launch overlaps it).
void residentWake(int device);
// Whether copy `seq` of `device` is done: 1 done, 0 not yet, -1 failed (*err says why). Where the
// kernel left before it took the copy (its idle time ran out as the copy was posted), the copy is
// made here on the copy engine first.
int residentPoll(int device, std::uint64_t seq, base::Status* err);
// Another process of the job uses `device` in turns with this one (a peer on the same GPU, no
// MPS): the kernel is never started there again (staying on the GPU, it would hold it from that
// process's work until its time slice ends). A process the job does not know of (another job's)
// the kernel finds itself: switched out, it leaves, and is not started there for a while
// (CGDR_CUDA_RESIDENT_BACKOFF).
void residentShared(int device);
// Tells the running kernels that this process is in MPI (its engine's progress steps): a kernel
// leaves CGDR_CUDA_RESIDENT_IDLE after its last copy or the last such word, whichever is later.
void residentKeepAlive();
// Asks the running kernels to leave as soon as they took what was posted to them: the process is
// about to wait for a whole GPU (cudaDeviceSynchronize, cudaFree: interpose/cuda_alloc.cc), which
// would otherwise wait out their idle time. Lock-free; nothing where no kernel was ever started.
void residentLeave();
// The program reset the GPUs (cudaDeviceReset, after residentLeave and a synchronize): the
// kernels' mailboxes (page-locked host memory), streams and helpers' memory went with the
// context. Drops every pointer to them - residentKeepAlive writing into a freed mailbox would
// corrupt or crash - and starts no kernel again.
void residentForget();
// Whether `device`'s kernel holds copies not yet seen done.
bool residentBusy(int device);
// Waits until every copy posted so far is done (before memory they may touch goes away).
void residentQuiesce();

// Copies the resident kernels took, launches, copies made on the copy engine after a kernel left
// without them, and copies it could have taken that found it not running (not started, left, or
// paused: CGDR_CUDA_RESIDENT_BACKOFF) or full; batches of copies its helpers shared
// (CGDR_CUDA_RESIDENT_BLOCKS); kernels that left because their context was switched out, or
// because they were asked (residentLeave), and the longest time any kernel that ended spent
// between two looks at its mailbox, in ns; copies that waited for a launched kernel's start
// (CGDR_CUDA_RESIDENT_START_WAIT) and their waits' sum in ns (CGDR_STATS).
struct ResidentCounts {
  unsigned long long copies = 0, launches = 0, redone = 0, notRunning = 0, full = 0, crewed = 0, turned = 0,
                     leftAsked = 0, longestNs = 0, waited = 0, waitedNs = 0;
};
ResidentCounts residentCounts();

}  // namespace cgdr::mem
