// cuda-ipc: legacy CUDA IPC handles. The sender exports the allocation holding its buffer; the
// receiver opens it (once: the cache is validated by buffer id, so memory freed and allocated
// again at the same address is opened afresh) and pulls the bytes with the copy engine.
// Usable only where the importer's PID namespace can see the exporter (topo decides).
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "base/cuda.hpp"

namespace cgdr::channel::cuda_ipc {

struct Handle {
  std::uint8_t bytes[64];
  std::uint64_t base;      // the allocation's address in the exporter (cache key)
  std::uint64_t offset;    // of the data within the allocation
  std::uint64_t bufferId;  // unique per allocation
};

// The handle of the device allocation `a` (as the driver described the allocation holding p)
// for [p, p+n); false for anything else (managed, host, cuMem memory) or when CUDA refuses.
bool exportHandle(const base::cuda::PointerAttrs& a, const void* p, std::size_t n, Handle* out);

// Opened handles of the peers, per (peer, exporter base address).
class Cache {
 public:
  // The address of the handle's data in this process (opened or cached), nullptr on failure.
  void* open(int peer, const Handle& h);
  void closeAll();
  ~Cache() { closeAll(); }

 private:
  struct Entry {
    std::uint64_t bufferId;
    void* base;
  };
  std::mutex mutex_;
  std::map<std::pair<int, std::uint64_t>, Entry> entries_;
};

}  // namespace cgdr::channel::cuda_ipc
