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

// Whether [a, a + n) and [b, b + m) share a byte.
__device__ bool overlaps(unsigned long long a, unsigned long long n, unsigned long long b, unsigned long long m) {
  return n && m && a < b + m && b < a + n;
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

// The resident copy kernel's helpers (blocks 1 .. gridDim.x - 1; mem/gather.hpp): each joins the
// crew, then copies its part of every batch the leader shares with it, until the leader leaves.
__device__ void residentHelper(cgdr::mem::ResidentCrew* crew) {
  constexpr int kSlots = cgdr::mem::kResidentSlots;
  __shared__ unsigned long long me, word;
  __shared__ cgdr::mem::GatherItem items[kSlots];
  volatile cgdr::mem::ResidentCrew* v = crew;
  if (threadIdx.x == 0) me = atomicAdd(reinterpret_cast<unsigned long long*>(&crew->joined), 1ull) + 1;
  unsigned long long seen = 0;  // the last batch looked at
  for (;;) {
    if (threadIdx.x == 0) {
      unsigned long long w;
      for (;;) {  // (a pause between looks: less traffic on the line the leader writes)
        w = v->batch;
        if (w == cgdr::mem::kCrewLeave || (w >> 16) > seen) break;
        __nanosleep(64);
      }
      __threadfence();  // the batch's messages were written before `batch`
      word = w;
    }
    __syncthreads();
    const unsigned long long w = word;
    if (w == cgdr::mem::kCrewLeave) return;
    seen = w >> 16;
    const unsigned long long parts = w & 0xff, count = (w >> 8) & 0xff;
    if (me >= parts) {  // joined after the leader counted the crew: the next batch
      __syncthreads();  // (word is written again)
      continue;
    }
    for (unsigned long long i = threadIdx.x; i < count; i += blockDim.x)
      items[i] = cgdr::mem::GatherItem{v->item[i].src, v->item[i].dst, v->item[i].n};
    __syncthreads();
    const unsigned long long first = me * blockDim.x + threadIdx.x, step = parts * blockDim.x;
    bool wrote = false;
    for (unsigned long long i = 0; i < count; ++i) {
      wrote = wrote || first < items[i].n;
      copyItem(items[i], first, step);
    }
    if (wrote) __threadfence_system();  // this part reaches the peer's GPU before the leader's flags
    __syncthreads();
    if (threadIdx.x == 0) {
      __threadfence();
      atomicAdd(reinterpret_cast<unsigned long long*>(&crew->arrived), 1ull);
    }
  }
}

// The parts a crewed leader splits a batch of `count` slots into (all its threads call it): 1 where
// no copy is over `soloBytes` or one copy overlaps another's target (the blocks' parts are not
// ordered among themselves), else the leader's and one for each helper that has joined.
__device__ unsigned long long crewParts(const unsigned long long (*slotWords)[8], unsigned long long count,
                                        unsigned long long soloBytes, cgdr::mem::ResidentCrew* crew) {
  __shared__ unsigned long long parts;
  unsigned long long most = 0;
  for (unsigned long long i = 0; i < count; ++i) most = slotWords[i][2] > most ? slotWords[i][2] : most;
  if (most <= soloBytes) return 1;
  bool overlap = false;
  if (threadIdx.x < count) {
    const unsigned long long* a = slotWords[threadIdx.x];
    for (unsigned long long j = threadIdx.x + 1; j < count; ++j) {
      const unsigned long long* b = slotWords[j];
      overlap = overlap || overlaps(a[1], a[2], b[1], b[2]) || overlaps(a[1], a[2], b[0], b[2]) ||
                overlaps(a[0], a[2], b[1], b[2]);
    }
  }
  if (__syncthreads_or(overlap)) return 1;
  if (threadIdx.x == 0) {
    const unsigned long long joined = static_cast<volatile cgdr::mem::ResidentCrew*>(crew)->joined;
    parts = 1 + (joined < gridDim.x - 1 ? joined : gridDim.x - 1);
  }
  __syncthreads();
  return parts;
}

// The resident copy kernel (mem/gather.hpp): block 0 of kResidentThreads (the leader), and
// gridDim.x - 1 helpers where `crew` is given, sharing batches with a copy over `soloBytes`.
// Generation `gen`, started with every message up to `seq` already taken care of; leaves after
// `idleNs` without a message, once it has run `lifeNs` (checked between batches), when the CPU
// asks (kResidentLeave), or where `turnNs` (0: never) passed between two of its looks at the box:
// its context was switched out for another's (a GPU time-sliced with another process). A batch's
// flags are written after its copies' fence, before its `done`.
extern "C" __global__ void cgdr_resident(ResidentBox* box, cgdr::mem::ResidentCrew* crew, unsigned long long gen,
                                         unsigned long long seq, unsigned long long idleNs, unsigned long long lifeNs,
                                         unsigned long long soloBytes, unsigned long long turnNs) {
  if (blockIdx.x > 0) {
    residentHelper(crew);
    return;
  }
  constexpr int kSlots = cgdr::mem::kResidentSlots;
  __shared__ unsigned long long upTo;
  __shared__ unsigned long long slotWords[kSlots][8];  // the batch's slots (one cache line each)
  volatile ResidentBox* v = box;
  volatile cgdr::mem::ResidentCrew* vc = crew;
  const bool crewed = crew && gridDim.x > 1;
  unsigned long long batches = 0, expected = 0;  // (thread 0) batches shared; parts the helpers owe
  unsigned long long longest = 0, turned = 0;    // (thread 0) the longest time between two looks; the one it left on
  bool asked = false;                            // (thread 0) it left because the CPU asked
  const unsigned long long born = nowNs();
  if (threadIdx.x == 0) {
    v->started = gen;
    __threadfence_system();  // (seen by the CPU now, not with the first `done`)
  }
  for (;;) {
    if (threadIdx.x == 0) {
      unsigned long long last = nowNs(), prev = last, r = 0, k = 0, kept = 0;
      for (;;) {
        const unsigned long long t = nowNs();
        if (t - prev > longest) longest = t - prev;
        if (turnNs && t - prev > turnNs) {
          turned = t - prev;
          r = 0;
          break;
        }
        prev = t;
        if (t - born > lifeNs) {
          r = 0;
          break;
        }
        loadRingKeep(reinterpret_cast<const unsigned long long*>(&box->ring), &r, &k);
        if (r > seq) {
          asm volatile("fence.acq_rel.sys;" ::: "memory");  // the slots were written before `ring`
          break;
        }
        if (k == cgdr::mem::kResidentLeave) {  // (every message posted before it was taken above)
          asked = true;
          r = 0;
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
      const unsigned long long count = target - seq;
      // every slot of the batch at once: eight threads a slot, one line each from host memory
      for (unsigned long long i = threadIdx.x; i < count * 8; i += blockDim.x)
        slotWords[i / 8][i % 8] =
            reinterpret_cast<const volatile unsigned long long*>(&box->slot[(seq + 1 + i / 8) % kSlots])[i % 8];
      __syncthreads();
      const unsigned long long p = crewed ? crewParts(slotWords, count, soloBytes, crew) : 1;
      if (p > 1) {  // shared with helpers 1 .. p - 1
        for (unsigned long long i = threadIdx.x; i < count; i += blockDim.x) {
          vc->item[i].src = slotWords[i][0];
          vc->item[i].dst = slotWords[i][1];
          vc->item[i].n = slotWords[i][2];
        }
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) {
          __threadfence();
          ++batches;
          expected += p - 1;
          vc->batch = batches << 16 | count << 8 | p;
        }
      }
      bool wrote = false;
      for (unsigned long long i = 0; i < count; ++i) {
        const cgdr::mem::GatherItem it{slotWords[i][0], slotWords[i][1], slotWords[i][2]};
        wrote = wrote || threadIdx.x < it.n;
        copyItem(it, threadIdx.x, p * blockDim.x);
        if (p == 1 && i + 1 < count) __syncthreads();  // in order: a later message may overwrite this one
      }
      // The copies reach the peer's GPU before a flag or `done` reaches host memory: each writer's
      // fence, then the block's barrier (and the helpers' arrivals), then the fence of the thread
      // that writes them.
      if (wrote) __threadfence_system();
      __syncthreads();
      if (threadIdx.x == 0) {
        if (p > 1)
          while (vc->arrived < expected) {
          }
        __threadfence_system();
        for (unsigned long long i = 0; i < count; ++i)
          if (slotWords[i][3]) *reinterpret_cast<volatile unsigned long long*>(slotWords[i][3]) = slotWords[i][4];
        v->done = target;
        if (p > 1) v->crewed = batches;
      }
      seq = target;  // (slotWords, read by thread 0 above, is written again after its next poll's barrier)
    }
    if (target == 0) break;  // (thread 0 alone decides, lifetime included: the whole block leaves together)
  }
  if (threadIdx.x == 0) {
    if (crewed) {
      __threadfence();
      vc->batch = cgdr::mem::kCrewLeave;
    }
    v->longest = longest;
    v->turned = turned;
    v->asked = asked;
    __threadfence_system();
    v->exited = gen;
  }
}
