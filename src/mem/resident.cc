#include "mem/resident.hpp"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>

#include "base/config.hpp"
#include "base/log.hpp"
#include "mem/classify.hpp"
#include "mem/gather.hpp"
#include "mem/gpu_batch.hpp"
#include "mem/gpu_copy.hpp"

#if CGDR_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace cgdr::mem {
namespace {

base::ChoiceSetting gResident(
    "CGDR_CUDA_RESIDENT", "auto", {"auto", "off", "always"},
    "auto: lone small GPU-to-GPU copies to another GPU (a ping-pong's messages) taken by a copy kernel that stays "
    "on the GPU while such copies come less than 100 us apart: a few stores to mapped host memory instead of a "
    "copy-engine operation's issue and wait, and where the receiver advertised its receive the kernel tells it "
    "itself (CGDR_CUDA_RESIDENT_NOTIFY). On two H200s 8-64 B D-D latency fell from 9.6-9.9 to 8.0-8.4 us across "
    "containers (docs/performance.md, forty-ninth session). It holds one block of 128 threads (part of one SM; "
    "more with CGDR_CUDA_RESIDENT_BLOCKS) while it runs, leaves CGDR_CUDA_RESIDENT_IDLE after its last copy or "
    "the process's last MPI progress, and after 5 ms; the program's cudaDeviceSynchronize and cudaFree (through the "
    "shared CUDA runtime) ask it to leave first (~5 us instead of ~24 on one H200; a statically linked runtime "
    "waits for it). A copy that comes while it is launched but not yet running waits for its start "
    "(CGDR_CUDA_RESIDENT_START_WAIT). Never where the other side is on this GPU, nor on a GPU another rank of the "
    "job shares without MPS; where another process's work runs on the GPU in turns with it, it leaves "
    "(CGDR_CUDA_RESIDENT_BACKOFF). off: the copy engine. always: started at the first such copy (tests).");
base::Setting<base::Bytes> gLimit("CGDR_CUDA_RESIDENT_LIMIT", "16K", "bytes",
                                  "The largest copy CGDR_CUDA_RESIDENT takes (one block moves it: larger ones are "
                                  "faster on the copy engine). On two H200s a limit of 64K against 4K moved 8 and 16 "
                                  "KiB D-D latency by -1.1 to -1.3 us across containers, -0.8 to -1.2 natively, 32 "
                                  "KiB by -0.8 / +0.1 and 64 KiB by +0.8 (docs/performance.md, fiftieth session).");
base::Setting<double> gIdle("CGDR_CUDA_RESIDENT_IDLE", "20", "us",
                            "CGDR_CUDA_RESIDENT's kernel leaves after this long without a copy or an MPI progress "
                            "step of its process. What waits for the whole GPU waits for it to leave: up to this "
                            "long after the process left MPI, except cudaDeviceSynchronize and cudaFree through the "
                            "shared CUDA runtime, which ask it to leave at once.",
                            base::DoubleRange{1, 10'000'000});

base::Setting<long long> gBlocks("CGDR_CUDA_RESIDENT_BLOCKS", "1", "blocks",
                                 "Blocks of CGDR_CUDA_RESIDENT's kernel (128 threads each). Beyond the first, "
                                 "helpers that copy their parts of copies larger than CGDR_CUDA_RESIDENT_SOLO: with "
                                 "them CGDR_CUDA_RESIDENT_LIMIT may be raised. They stay on their SMs while the kernel "
                                 "runs.",
                                 base::IntRange{1, kResidentMaxBlocks});
base::Setting<double> gBackoff(
    "CGDR_CUDA_RESIDENT_BACKOFF", "1000", "ms",
    "Where CGDR_CUDA_RESIDENT's kernel finds its GPU shared in turns with another process (its context switched out "
    "for over 100 us between two looks at its mailbox: time slices, no MPS, e.g. another job's pod on the GPU), it "
    "leaves and is not started on that GPU again for this long, twice as long each further time (at most 64 times): "
    "spinning, it would hold the GPU from the other process's work for its whole time slice (beside a process "
    "running kernels back to back on one H200, that process's kernels took 505-508 us each with the kernel staying, "
    "274-277 with it leaving, as with copies on the copy engine, and 11-12 with the GPU to itself: "
    "docs/performance.md, fifty-second session). 0: it does not watch (stays, as before that session).",
    base::DoubleRange{0, 3'600'000});
base::Setting<double> gStartWait(
    "CGDR_CUDA_RESIDENT_START_WAIT", "30", "us",
    "A copy CGDR_CUDA_RESIDENT could take that comes while the kernel was launched but has not started yet waits "
    "for its start, up to this long after the launch, instead of going to the copy engine (the later copies of a "
    "burst that came after a lull, whose first one started the kernel). Past it (the GPU busy with other "
    "kernels), copies go to the copy engine: none waits on a kernel that may not start. 0: none waits.",
    base::DoubleRange{0, 1000});
base::Setting<base::Bytes> gSolo("CGDR_CUDA_RESIDENT_SOLO", "16K", "bytes",
                                 "With CGDR_CUDA_RESIDENT_BLOCKS > 1, the largest copy the kernel's first block moves "
                                 "alone; larger ones it shares with its helpers (sharing costs ~2 us: within one H200, "
                                 "one block was faster up to 64 KiB, eight from 128 KiB; docs/performance.md, "
                                 "fifty-first session).");

enum { kAuto, kOff, kAlways };
constexpr std::uint64_t kLifeNs = 5'000'000;     // a kernel leaves after this long (a new one follows if needed)
constexpr std::uint64_t kOftenNs = 100'000;      // copies this close together start it (a ping-pong's: 16-30 us)
constexpr std::uint64_t kCheckNs = 1'000'000;    // a copy pending this long has its kernel's stream asked
// This long between two looks at its box: switched out. On one H200 looks came at most 7.6 us apart
// alone, 19.8 us with this process's copies keeping PCIe busy both ways (27 GB/s each), and 313-1537
// us apart where another process's kernels took turns with it (docs/performance.md, 52nd session).
constexpr std::uint64_t kTurnNs = 100'000;
constexpr unsigned kMostDoublings = 6;           // CGDR_CUDA_RESIDENT_BACKOFF grows up to 64 times
constexpr int kMaxDevices = 64;

std::atomic<unsigned long long> gCopies{0}, gLaunches{0}, gRedone{0}, gNotRunning{0}, gFull{0}, gCrewed{0},
    gTurned{0}, gLeftAsked{0}, gLongest{0}, gWaited{0}, gWaitedNs{0};

}  // namespace

#if CGDR_HAVE_CUDA
namespace {

std::uint64_t nowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}

int blocks() {
  static const int v = static_cast<int>(gBlocks.get());  // 1 to kResidentMaxBlocks (its range)
  return v;
}

std::uint64_t idleNs() {
  static const std::uint64_t v = static_cast<std::uint64_t>(gIdle.get() * 1000.0);  // (1 us to 10 s: its range)
  return v;
}

std::uint64_t startWaitNs() {  // (0: no copy waits for a launched kernel to start)
  static const std::uint64_t v = static_cast<std::uint64_t>(gStartWait.get() * 1000.0);  // (0-1000 us: its range)
  return v;
}

std::uint64_t backoffNs() {  // (0: the kernel does not watch for turns)
  static const std::uint64_t v = static_cast<std::uint64_t>(gBackoff.get() * 1e6);  // (up to an hour: its range)
  return v;
}

// One GPU's kernel. `floor`: every copy up to it is done (by an earlier kernel, or made on the copy
// engine after that kernel left without it); the kernel of generation `gen` was launched with
// `floor` == `posted` and writes `done` above it.
struct Device {
  std::mutex m;
  ResidentBox* box = nullptr;  // mapped host memory (never freed: a kernel may still read it at exit)
  ResidentBox* boxDev = nullptr;
  ResidentCrew* crew = nullptr;  // device memory, where the kernel has helpers (never freed, as the box)
  cudaStream_t stream = nullptr;
  std::uint64_t gen = 0, posted = 0;
  std::uint64_t* hostFlag[kResidentSlots] = {};  // the flags of the posted slots, for this CPU
  std::atomic<std::uint64_t> floor{0};
  std::uint64_t lastNs = 0;   // the last copy it could have taken
  std::uint64_t checkNs = 0;  // its stream last asked
  std::uint64_t launchNs = 0;  // its launch
  std::uint64_t pauseUntil = 0;  // not started before (CGDR_CUDA_RESIDENT_BACKOFF)
  unsigned turns = 0;            // kernels that left switched out
  bool wanted = false, broken = false, prepared = false, shared = false;
};

Device* devices[kMaxDevices] = {};
std::mutex devicesMutex;
// The boxes made so far, for residentKeepAlive without a lock: devices 0 .. gBoxes - 1.
std::atomic<ResidentBox*> gBox[kMaxDevices] = {};
std::atomic<int> gBoxes{0};

Device* deviceOf(int device, bool create) {
  if (device < 0 || device >= kMaxDevices) return nullptr;
  std::lock_guard lock(devicesMutex);
  if (!devices[device] && create) devices[device] = new Device;  // outlives static destructors
  return devices[device];
}

std::uint64_t load(const std::uint64_t& w) { return __atomic_load_n(&w, __ATOMIC_ACQUIRE); }

std::uint64_t completed(const Device& d) {
  std::uint64_t f = d.floor.load(std::memory_order_acquire);
  if (!d.box) return f;
  std::uint64_t done = load(d.box->done);
  return done > f ? done : f;
}

bool running(const Device& d) {  // (d.m held)
  return d.gen && load(d.box->started) == d.gen && load(d.box->exited) != d.gen;
}
bool launching(const Device& d) {  // launched, not started yet
  return d.gen && load(d.box->started) != d.gen && load(d.box->exited) != d.gen;
}

base::Status fail(Device& d, const char* what, cudaError_t e) {
  (void)cudaGetLastError();
  d.broken = true;
  std::string m = std::string("resident copy kernel: ") + what + ": " + cudaGetErrorString(e);
  CGDR_LOG(kError, kCuda, "%s", m.c_str());
  return base::Status(base::Errc::kCuda, m);
}

// Takes what the kernel of d.gen, now ended, wrote on its way out (d.m held), clearing the words
// (a later look finds nothing new; the next kernel writes them again): where it left because its
// context was switched out, the kernel is not started on this GPU before the pause.
void noteExit(Device& d, int device) {
  const std::uint64_t longest = load(d.box->longest), turned = load(d.box->turned);
  if (load(d.box->asked)) gLeftAsked.fetch_add(1, std::memory_order_relaxed);
  d.box->longest = d.box->turned = d.box->asked = 0;
  for (unsigned long long l = gLongest.load(std::memory_order_relaxed);
       longest > l && !gLongest.compare_exchange_weak(l, longest, std::memory_order_relaxed);) {
  }
  if (!turned) return;
  gTurned.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t pause = backoffNs() << std::min(d.turns++, kMostDoublings);
  d.pauseUntil = nowNs() + pause;
  d.wanted = false;
  if (d.turns == 1)
    CGDR_LOG(kInfo, kCuda,
             "GPU %d runs another process's work in turns with this one (the resident copy kernel was switched "
             "out for %.0f us): small copies use the copy engine there for %.1f s, longer each further time "
             "(under MPS the two would run side by side)",
             device, turned / 1e3, pause / 1e9);
  else
    CGDR_LOG(kDebug, kCuda, "GPU %d: the resident copy kernel was switched out again (%.0f us): paused for %.1f s",
             device, turned / 1e3, pause / 1e9);
}

// Where the kernel of `gen` left (or ended without saying so) before taking every copy posted to
// it, makes the rest on the copy engine and waits for them (d.m held). A kernel that failed
// fails the copies.
base::Status reap(Device& d, int device) {
  if (!d.gen) return base::Status::ok();
  DeviceScope scope(device);
  if (load(d.box->exited) != d.gen) {
    cudaError_t q = cudaStreamQuery(d.stream);
    if (q == cudaErrorNotReady) return base::Status::ok();
    if (q != cudaSuccess) return fail(d, "kernel", q);
    // it ended without writing `exited`: it takes nothing more either
  }
  noteExit(d, device);
  std::uint64_t from = completed(d);
  if (from >= d.posted) return base::Status::ok();
  for (std::uint64_t k = from + 1; k <= d.posted; ++k) {
    const GatherItem& it = d.box->slot[k % kResidentSlots].item;  // (written by this CPU only)
    cudaError_t e = cudaMemcpyAsync(reinterpret_cast<void*>(it.dst), reinterpret_cast<const void*>(it.src), it.n,
                                    cudaMemcpyDefault, d.stream);
    if (e != cudaSuccess) return fail(d, "copy after the kernel left", e);
  }
  cudaError_t e = cudaStreamSynchronize(d.stream);
  if (e != cudaSuccess) return fail(d, "copy after the kernel left", e);
  for (std::uint64_t k = from + 1; k <= d.posted; ++k)
    if (std::uint64_t* f = d.hostFlag[k % kResidentSlots])
      __atomic_store_n(f, d.box->slot[k % kResidentSlots].value, __ATOMIC_RELEASE);
  gRedone.fetch_add(d.posted - from, std::memory_order_relaxed);
  d.floor.store(d.posted, std::memory_order_release);
  return base::Status::ok();
}

}  // namespace

bool residentFits(std::size_t n) {
  static const std::size_t limit = gLimit.get().value;
  static const bool on = gResident.get().index != kOff;
  return on && n > 0 && n <= limit;
}

std::uint64_t residentPost(int device, void* dst, const void* src, std::size_t n, const DoneFlag* flag) {
  if (!residentFits(n)) return 0;
  Device* d = deviceOf(device, true);
  if (!d) return 0;
  std::lock_guard lock(d->m);
  if (d->broken) return 0;
  std::uint64_t now = nowNs();
  static const bool always = gResident.get().index == kAlways;
  bool often = always || (d->lastNs && now - d->lastNs < kOftenNs);
  d->lastNs = now;
  if (d->shared) return 0;  // (a kernel still running leaves when idle)
  if (now < d->pauseUntil) {  // (switched out not long ago: residentWake found it)
    gNotRunning.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  if (d->box && launching(*d) && now - d->launchNs < startWaitNs()) {  // (see CGDR_CUDA_RESIDENT_START_WAIT)
    const std::uint64_t until = d->launchNs + startWaitNs();
    std::uint64_t t = now;
    while (launching(*d) && t < until) t = nowNs();
    gWaited.fetch_add(1, std::memory_order_relaxed);
    gWaitedNs.fetch_add(t - now, std::memory_order_relaxed);
  }
  if (!d->box || !running(*d)) {
    if (often && !(d->box && launching(*d))) d->wanted = true;
    if (d->gen) gNotRunning.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  if (d->posted - completed(*d) >= static_cast<std::uint64_t>(kResidentSlots)) {  // full: the engine
    gFull.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  std::uint64_t seq = ++d->posted;
  if (flag && !flag->usable()) flag = nullptr;
  ResidentBox::Slot& s = d->box->slot[seq % kResidentSlots];
  s.item = GatherItem{reinterpret_cast<std::uint64_t>(src), reinterpret_cast<std::uint64_t>(dst), n};
  s.flag = flag ? flag->device : 0;
  s.value = flag ? flag->value : 0;
  d->hostFlag[seq % kResidentSlots] = flag ? flag->host : nullptr;
  __atomic_store_n(&d->box->ring, seq, __ATOMIC_RELEASE);
  gCopies.fetch_add(1, std::memory_order_relaxed);
  return seq;
}

void residentWake(int device) {
  Device* d = deviceOf(device, false);
  if (!d) return;
  std::lock_guard lock(d->m);
  if (!d->wanted || d->broken) return;
  d->wanted = false;
  if (d->box && (running(*d) || launching(*d))) return;
  DeviceScope scope(device);
  if (!d->box) {
    void* host = nullptr;
    void* dev = nullptr;
    cudaError_t e = cudaHostAlloc(&host, sizeof(ResidentBox), cudaHostAllocMapped | cudaHostAllocPortable);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer(&dev, host, 0);
    if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&d->stream, cudaStreamNonBlocking);
    if (e == cudaSuccess && blocks() > 1) e = cudaMalloc(reinterpret_cast<void**>(&d->crew), sizeof(ResidentCrew));
    if (e != cudaSuccess) {
      (void)fail(*d, "set-up", e);
      return;
    }
    noteGpuState();
    d->box = new (host) ResidentBox{};
    d->boxDev = static_cast<ResidentBox*>(dev);
    gBox[device].store(d->box, std::memory_order_release);
    int n = gBoxes.load(std::memory_order_relaxed);
    while (n < device + 1 && !gBoxes.compare_exchange_weak(n, device + 1, std::memory_order_release)) {
    }
  }
  if (!reap(*d, device).isOk() || nowNs() < d->pauseUntil) return;
  if (!d->prepared) {  // both kernels loaded before this one runs (a lazy load may wait for it)
    cudaError_t e = static_cast<cudaError_t>(prepareKernels());
    if (e != cudaSuccess) {
      d->broken = true;
      (void)cudaGetLastError();
      CGDR_LOG(kInfo, kCuda, "resident copy kernel unavailable (%s): small copies stay on the copy engine",
               cudaGetErrorString(e));
      return;
    }
    d->prepared = true;
  }
  std::uint64_t gen = d->gen + 1;
  cudaError_t e = cudaSuccess;
  if (d->crew) {  // (the kernel before, if any, has ended: its count is final)
    gCrewed.fetch_add(load(d->box->crewed), std::memory_order_relaxed);
    __atomic_store_n(&d->box->crewed, 0, __ATOMIC_RELAXED);
    e = cudaMemsetAsync(d->crew, 0, offsetof(ResidentCrew, item), d->stream);
  }
  __atomic_store_n(&d->box->keep, 0, __ATOMIC_RELAXED);  // (a leave asked of the kernel before; the launch orders it)
  if (e == cudaSuccess)
    e = static_cast<cudaError_t>(launchResident(d->boxDev, d->crew, blocks(), gen, d->posted, idleNs(), kLifeNs,
                                                gSolo.get().value, backoffNs() ? kTurnNs : 0, d->stream));
  if (e != cudaSuccess) {
    d->broken = true;
    (void)cudaGetLastError();
    CGDR_LOG(kInfo, kCuda, "resident copy kernel cannot run on GPU %d (%s): small copies stay on the copy engine",
             device, cudaGetErrorString(e));
    return;
  }
  d->gen = gen;
  d->floor.store(d->posted, std::memory_order_release);  // (reap left nothing above it undone)
  d->checkNs = d->launchNs = nowNs();
  gLaunches.fetch_add(1, std::memory_order_relaxed);
}

int residentPoll(int device, std::uint64_t seq, base::Status* err) {
  Device* d = deviceOf(device, false);
  if (!d || !gBox[device].load(std::memory_order_acquire)) return 1;  // (nothing was ever posted there)
  if (completed(*d) >= seq) return 1;
  std::lock_guard lock(d->m);
  if (completed(*d) >= seq) return 1;
  std::uint64_t now = nowNs();
  if (load(d->box->exited) == d->gen || now - d->checkNs >= kCheckNs) {
    d->checkNs = now;
    base::Status st = reap(*d, device);
    if (!st.isOk()) {
      *err = st;
      return -1;
    }
  }
  if (d->broken && completed(*d) < seq) {
    *err = base::Status(base::Errc::kCuda, "resident copy kernel failed");
    return -1;
  }
  return completed(*d) >= seq ? 1 : 0;
}

void residentShared(int device) {
  Device* d = deviceOf(device, true);
  if (!d) return;
  std::lock_guard lock(d->m);
  if (!d->shared) CGDR_LOG(kInfo, kCuda, "GPU %d is shared with a peer: no resident copy kernel there", device);
  d->shared = true;
  d->wanted = false;
}

void residentKeepAlive() {
  static thread_local std::uint64_t lastNs = 0;
  int n = gBoxes.load(std::memory_order_acquire);
  if (n == 0) return;
  std::uint64_t now = nowNs();
  if (now - lastNs < 2000) return;  // (every 2 us at most: the kernel reads it over PCIe)
  lastNs = now;
  if (gpuStateLost()) return;  // (a reset cgdr did not see freed the mailboxes)
  for (int i = 0; i < n; ++i)
    if (ResidentBox* b = gBox[i].load(std::memory_order_acquire)) {
      std::uint64_t k = __atomic_load_n(&b->keep, __ATOMIC_RELAXED);
      if (k != kResidentLeave)  // (a leave asked meanwhile stays)
        __atomic_compare_exchange_n(&b->keep, &k, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
}

void residentLeave() {
  int n = gBoxes.load(std::memory_order_acquire);
  if (n > 0 && gpuStateLost()) return;
  for (int i = 0; i < n; ++i)
    if (ResidentBox* b = gBox[i].load(std::memory_order_acquire))
      __atomic_store_n(&b->keep, kResidentLeave, __ATOMIC_RELEASE);
}

void residentForget() {
  for (int i = 0; i < kMaxDevices; ++i) {
    Device* d = deviceOf(i, false);
    if (!d) continue;
    std::lock_guard lock(d->m);
    gBox[i].store(nullptr, std::memory_order_release);
    d->box = d->boxDev = nullptr;
    d->crew = nullptr;
    d->stream = nullptr;
    d->broken = true;
  }
}

bool residentBusy(int device) {
  if (device < 0 || device >= gBoxes.load(std::memory_order_acquire) || !gBox[device].load(std::memory_order_acquire))
    return false;  // (never started there: no lock)
  Device* d = deviceOf(device, false);
  if (!d) return false;
  std::lock_guard lock(d->m);
  return d->posted > completed(*d);
}

void residentQuiesce() {
  for (int i = 0; i < kMaxDevices; ++i) {
    Device* d = deviceOf(i, false);
    if (!d) continue;
    std::uint64_t last;
    {
      std::lock_guard lock(d->m);
      last = d->posted;
    }
    base::Status err;
    for (int spins = 0; residentPoll(i, last, &err) == 0; ++spins)
      if (spins > 64) std::this_thread::yield();
  }
}

#else

bool residentFits(std::size_t) { return false; }
std::uint64_t residentPost(int, void*, const void*, std::size_t, const DoneFlag*) { return 0; }
void residentWake(int) {}
void residentShared(int) {}
void residentKeepAlive() {}
void residentLeave() {}
void residentForget() {}
int residentPoll(int, std::uint64_t, base::Status*) { return 1; }
bool residentBusy(int) { return false; }
void residentQuiesce() {}

#endif

ResidentCounts residentCounts() {
  unsigned long long crewed = gCrewed.load(std::memory_order_relaxed);
#if CGDR_HAVE_CUDA
  for (int i = 0; i < gBoxes.load(std::memory_order_acquire); ++i)  // the kernels' own counts since their launch
    if (Device* d = deviceOf(i, false)) {
      std::lock_guard lock(d->m);
      if (d->box) crewed += load(d->box->crewed);
      if (d->box && d->gen && load(d->box->exited) == d->gen) noteExit(*d, i);  // (its words are final)
    }
#endif
  return {gCopies.load(std::memory_order_relaxed), gLaunches.load(std::memory_order_relaxed),
          gRedone.load(std::memory_order_relaxed), gNotRunning.load(std::memory_order_relaxed),
          gFull.load(std::memory_order_relaxed), crewed, gTurned.load(std::memory_order_relaxed),
          gLeftAsked.load(std::memory_order_relaxed), gLongest.load(std::memory_order_relaxed),
          gWaited.load(std::memory_order_relaxed), gWaitedNs.load(std::memory_order_relaxed)};
}

}  // namespace cgdr::mem
