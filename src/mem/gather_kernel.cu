// Device code of the copy kernel (mem/gather.hpp), built into a fat binary that libcgdr embeds and
// loads on first use (mem/gpu_batch.cc), so the library itself needs no CUDA language support.
// Block (m, j) copies its share j of item m: 16-byte loads and stores where source and
// destination are equally aligned modulo 16 (bytes before and after), else single bytes. Four
// 16-byte loads are in flight per thread before their stores, so that loads across NVLink, slow to
// come back, keep the link busy with fewer blocks (a copy kernel of this form moved 346-359 GB/s
// over NVLink from 16 blocks of 512 threads up: bench/vis_probe.cu, docs/performance.md, fourth session).
#include "mem/gather.hpp"

using cgdr::mem::GatherArgs;
using cgdr::mem::ResidentBox;

namespace {

__device__ void copyBytes(unsigned char* d, const unsigned char* s, unsigned long long n, unsigned long long first,
                          unsigned long long step) {
  for (unsigned long long i = first; i < n; i += step) d[i] = s[i];
}

// Copies item `it`, this thread taking the parts first, first + step, ... (16-byte loads where
// source and destination are equally aligned modulo 16, bytes before and after; else bytes).
__device__ void copyItem(const cgdr::mem::GatherItem& it, unsigned long long first, unsigned long long step) {
  const auto* s = reinterpret_cast<const unsigned char*>(it.src);
  auto* d = reinterpret_cast<unsigned char*>(it.dst);
  const unsigned long long mis = it.src & 15;
  if (mis != (it.dst & 15)) {
    copyBytes(d, s, it.n, first, step);
    return;
  }
  unsigned long long head = (16 - mis) & 15;
  if (head > it.n) head = it.n;
  copyBytes(d, s, head, first, step);
  const unsigned long long n16 = (it.n - head) / 16;
  const int4* s16 = reinterpret_cast<const int4*>(s + head);
  int4* d16 = reinterpret_cast<int4*>(d + head);
  unsigned long long i = first;
  for (; i + 3 * step < n16; i += 4 * step) {
    const int4 x0 = s16[i], x1 = s16[i + step], x2 = s16[i + 2 * step], x3 = s16[i + 3 * step];
    d16[i] = x0;
    d16[i + step] = x1;
    d16[i + 2 * step] = x2;
    d16[i + 3 * step] = x3;
  }
  for (; i < n16; i += step) d16[i] = s16[i];
  const unsigned long long done = head + n16 * 16;
  copyBytes(d + done, s + done, it.n - done, first, step);
}

__device__ unsigned long long nowNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// `ring` and `keep` (adjacent, 16-byte aligned: the box is page-aligned host memory) in one load.
__device__ void loadRingKeep(const unsigned long long* p, unsigned long long* ring, unsigned long long* keep) {
  asm volatile("ld.volatile.global.v2.u64 {%0, %1}, [%2];" : "=l"(*ring), "=l"(*keep) : "l"(p) : "memory");
}

}  // namespace

extern "C" __global__ void cgdr_gather(GatherArgs a) {
  if (blockIdx.x >= a.count) return;
  const unsigned long long first = blockIdx.y * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  const unsigned long long step = static_cast<unsigned long long>(gridDim.y) * blockDim.x;
  copyItem(a.item[blockIdx.x], first, step);
}

// The resident copy kernel (mem/gather.hpp): one block of kResidentThreads. Generation `gen`,
// started with every message up to `seq` already taken care of; leaves after `idleNs` without a
// message or once it has run `lifeNs` (checked between messages). A batch's flags are written
// after its copies' fence, before its `done`.
extern "C" __global__ void cgdr_resident(ResidentBox* box, unsigned long long gen, unsigned long long seq,
                                         unsigned long long idleNs, unsigned long long lifeNs) {
  constexpr int kSlots = cgdr::mem::kResidentSlots;
  __shared__ unsigned long long upTo;
  __shared__ unsigned long long slotWords[8];  // the slot being copied (one cache line)
  __shared__ unsigned long long flagAt[kSlots], flagValue[kSlots];  // the batch's flags (thread 0)
  volatile ResidentBox* v = box;
  const unsigned long long born = nowNs();
  if (threadIdx.x == 0) {
    v->started = gen;
    __threadfence_system();  // (seen by the CPU now, not with the first `done`)
  }
  for (;;) {
    if (threadIdx.x == 0) {
      unsigned long long last = nowNs(), r = 0, k = 0, kept = 0;
      for (;;) {
        const unsigned long long t = nowNs();
        if (t - born > lifeNs) {
          r = 0;
          break;
        }
        loadRingKeep(reinterpret_cast<const unsigned long long*>(&box->ring), &r, &k);
        if (r > seq) {
          asm volatile("fence.acq_rel.sys;" ::: "memory");  // the slots were written before `ring`
          break;
        }
        if (k != kept) {  // the process still waits in MPI
          kept = k;
          last = t;
        } else if (t - last > idleNs) {
          r = 0;
          break;
        }
      }
      upTo = r;
    }
    __syncthreads();
    const unsigned long long target = upTo;  // (0: leave; never more than kSlots above seq)
    if (target > seq) {
      bool wrote = false;
      for (unsigned long long k = seq + 1; k <= target; ++k) {
        if (threadIdx.x < 8)  // one warp load of the slot's line from host memory
          slotWords[threadIdx.x] = reinterpret_cast<const volatile unsigned long long*>(&box->slot[k % kSlots])[threadIdx.x];
        __syncthreads();
        const cgdr::mem::GatherItem it{slotWords[0], slotWords[1], slotWords[2]};
        if (threadIdx.x == 0) {
          flagAt[k % kSlots] = slotWords[3];
          flagValue[k % kSlots] = slotWords[4];
        }
        wrote = wrote || threadIdx.x < it.n;
        copyItem(it, threadIdx.x, blockDim.x);
        __syncthreads();  // (slotWords is read again for the next message)
      }
      // The copies reach the peer's GPU before a flag or `done` reaches host memory: each writer's
      // fence, then the block's barrier, then the fence of the thread that writes them.
      if (wrote) __threadfence_system();
      __syncthreads();
      if (threadIdx.x == 0) {
        __threadfence_system();
        for (unsigned long long k = seq + 1; k <= target; ++k)
          if (flagAt[k % kSlots]) *reinterpret_cast<volatile unsigned long long*>(flagAt[k % kSlots]) = flagValue[k % kSlots];
        v->done = target;
      }
      seq = target;
    }
    if (target == 0 || nowNs() - born > lifeNs) break;
  }
  if (threadIdx.x == 0) {
    __threadfence_system();
    v->exited = gen;
  }
}
