// The fixed-size identity record each rank writes into the job's locality list (shared memory).
// Everything in it is read back by other processes, so every field is validated on read.
#pragma once
#include <atomic>
#include <cstdint>
#include <string>

#include "base/status.hpp"
#include "topo/sysfs.hpp"

namespace cgdr::topo {

constexpr std::uint32_t kRecordMagic = 0x52444743;  // "CGDR"
constexpr std::uint16_t kRecordVersion = 1;
constexpr int kMaxGpus = 8;
constexpr int kMaxLinks = 18;
constexpr int kMaxNsLevels = 8;
constexpr int kCpuWords = 16;  // 1024 CPUs

// One GPU this rank can see.
struct GpuRecord {
  std::uint8_t uuid[16];
  char busId[16];                      // "0000:1b:00.0"
  char pciPath[96];                    // below /sys/devices
  std::int32_t numa;
  std::uint32_t linkCount;             // NVLink peers known (0 with no NVLink or no NVML)
  char linkPeers[kMaxLinks][16];       // bus ids at the other end of each active NVLink
};

enum RecordFlags : std::uint32_t {
  kFlagCuda = 1u << 0,         // a GPU is usable
  kFlagVmmFd = 1u << 1,        // cuMem allocations can be exported as POSIX file descriptors
  kFlagNvmlLinks = 1u << 2,    // NVLink peers were read from NVML
  kFlagPidNsChain = 1u << 3,   // the PID namespace ancestry is complete
};

struct IdentityRecord {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t size;
  std::uint64_t nonce;
  std::int32_t rank;
  std::uint32_t uid;
  std::int32_t pid;
  std::int32_t numa;                   // NUMA node of the CPUs it may run on, -1: several/unknown
  char bootId[40];
  char hostname[64];
  std::uint64_t shmDev, shmIno;        // the shared directory as this rank sees it
  std::uint64_t nsPid, nsIpc, nsUts, nsNet, nsMnt, nsUser;
  std::uint64_t pidNsChain[kMaxNsLevels];  // own PID namespace first, then its ancestors
  std::uint32_t pidNsDepth;
  std::uint32_t flags;
  std::int32_t currentGpu;             // index into gpus[] of the current device, -1: none
  std::uint32_t gpuCount;
  std::uint64_t cpus[kCpuWords];
  GpuRecord gpus[kMaxGpus];
  std::uint64_t checksum;              // over every byte before this field
  std::uint64_t ready;                 // == nonce once complete; accessed with std::atomic_ref

  bool hasFlag(RecordFlags f) const { return (flags & f) != 0; }
};
static_assert(std::atomic_ref<std::uint64_t>::is_always_lock_free, "records live in shared memory");

// Fills a record for this process from the system (root "" = the real /proc and /sys).
IdentityRecord collectIdentity(const SysReader& sys, const std::string& shmDir, int rank, std::uint64_t nonce);
// Computes and stores the checksum (the ready flag is stored separately by the writer).
void sealRecord(IdentityRecord& r);
// Checks a record read from shared memory for slot `slot` of the job with `nonce`.
base::Status validateRecord(const IdentityRecord& r, int slot, std::uint64_t nonce);
// "GPU-xxxxxxxx-xxxx-..." from the 16-byte UUID.
std::string uuidString(const std::uint8_t uuid[16]);

}  // namespace cgdr::topo
