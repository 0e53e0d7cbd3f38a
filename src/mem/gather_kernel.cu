// Device code of the copy kernel (mem/gather.hpp), built into a fat binary that libcgdr embeds and
// loads on first use (mem/gpu_batch.cc), so the library itself needs no CUDA language support.
// Block (m, j) copies its share j of item m: 16-byte loads and stores where source and
// destination are equally aligned modulo 16 (bytes before and after), else single bytes. Four
// 16-byte loads are in flight per thread before their stores, so that loads across NVLink, slow to
// come back, keep the link busy with fewer blocks (a copy kernel of this form moved 346-359 GB/s
// over NVLink from 16 blocks of 512 threads up: bench/vis_probe.cu, docs/performance.md, fourth session).
#include "mem/gather.hpp"

using cgdr::mem::GatherArgs;

namespace {

__device__ void copyBytes(unsigned char* d, const unsigned char* s, unsigned long long n, unsigned long long first,
                          unsigned long long step) {
  for (unsigned long long i = first; i < n; i += step) d[i] = s[i];
}

}  // namespace

extern "C" __global__ void cgdr_gather(GatherArgs a) {
  if (blockIdx.x >= a.count) return;
  const cgdr::mem::GatherItem it = a.item[blockIdx.x];
  const auto* s = reinterpret_cast<const unsigned char*>(it.src);
  auto* d = reinterpret_cast<unsigned char*>(it.dst);
  const unsigned long long first = blockIdx.y * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
  const unsigned long long step = static_cast<unsigned long long>(gridDim.y) * blockDim.x;
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
