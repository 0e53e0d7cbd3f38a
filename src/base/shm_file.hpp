// Shared-memory files in the shared directory (CGDR_SHM_DIR, /dev/shm by default): created 0600,
// checked to belong to this uid before use, mapped, and unlinked as soon as every user has mapped
// them. While open, a file is held with a shared flock; a file nobody holds is stale (its job was
// killed) and is removed by the next job (collectStale).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/status.hpp"

namespace cgdr::base {

// The shared directory in force (setting CGDR_SHM_DIR).
const std::string& shmDir();

class ShmFile {
 public:
  ShmFile() = default;
  ShmFile(ShmFile&& o) noexcept { *this = std::move(o); }
  ShmFile& operator=(ShmFile&& o) noexcept;
  ShmFile(const ShmFile&) = delete;
  ShmFile& operator=(const ShmFile&) = delete;
  ~ShmFile() { close(); }

  // Opens (creating if needed) dir/name, at least `bytes` long, mapped read-write. Refuses files
  // that are not regular, not owned by this uid or readable by others.
  static Result<ShmFile> open(const std::string& dir, const std::string& name, std::size_t bytes, bool create = true);

  void* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  int fd() const { return fd_; }
  // Removes the name (the mapping stays valid). Safe to call from several processes.
  void unlink();
  // Unmaps and closes (releases the flock).
  void close();

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  int fd_ = -1;
  std::string path_;
  bool unlinked_ = false;
};

// Removes this uid's cgdr files in dir that no live process holds and that are older than
// minAgeSeconds. Returns how many were removed.
int collectStale(const std::string& dir, double minAgeSeconds = 2.0);

// Prefix of every file cgdr puts in the shared directory for this uid: "cgdr-<uid>-".
std::string shmPrefix();

}  // namespace cgdr::base
