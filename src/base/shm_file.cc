#include "base/shm_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/config.hpp"
#include "base/log.hpp"

namespace cgdr::base {
namespace {

Setting<std::string> gShmDir("CGDR_SHM_DIR", "/dev/shm", "path",
                             "Directory for cgdr's shared-memory files and sockets; containers that share a "
                             "volume instead of /dev/shm meet there.");

Status sysError(const std::string& what) {
  std::string m = what + ": " + std::strerror(errno);
  return Status(Errc::kSystem, m);
}

}  // namespace

const std::string& shmDir() { return gShmDir.get(); }

std::string shmPrefix() { return "cgdr-" + std::to_string(getuid()) + "-"; }

ShmFile& ShmFile::operator=(ShmFile&& o) noexcept {
  if (this != &o) {
    close();
    data_ = o.data_;
    size_ = o.size_;
    fd_ = o.fd_;
    path_ = std::move(o.path_);
    unlinked_ = o.unlinked_;
    o.data_ = nullptr;
    o.fd_ = -1;
    o.size_ = 0;
  }
  return *this;
}

Result<ShmFile> ShmFile::open(const std::string& dir, const std::string& name, std::size_t bytes, bool create) {
  ShmFile f;
  f.path_ = dir + "/" + name;
  int flags = O_RDWR | O_NOFOLLOW | O_CLOEXEC | (create ? O_CREAT : 0);
  mode_t old = umask(077);
  f.fd_ = ::open(f.path_.c_str(), flags, 0600);
  umask(old);
  if (f.fd_ < 0) return sysError("open " + f.path_);
  if (flock(f.fd_, LOCK_SH) != 0) return sysError("flock " + f.path_);
  struct stat st {};
  if (fstat(f.fd_, &st) != 0) return sysError("fstat " + f.path_);
  if (!S_ISREG(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0)
    return Status(Errc::kSystem, f.path_ + " is not a private regular file of this user; not used");
  if (static_cast<std::size_t>(st.st_size) < bytes && ftruncate(f.fd_, static_cast<off_t>(bytes)) != 0)
    return sysError("ftruncate " + f.path_);
  // Reserve the pages now (also where another rank made the file and may not have reserved them
  // yet): a sparse file on a full tmpfs (e.g. a container's 64 MiB /dev/shm) would raise SIGBUS at
  // the first touch of a page beyond the limit instead of failing here.
  if (create) {
    if (fallocate(f.fd_, 0, 0, static_cast<off_t>(bytes)) != 0 && errno != EOPNOTSUPP && errno != ENOSYS) {
      int e = errno;
      if (st.st_size == 0) ::unlink(f.path_.c_str());  // made here: not left behind half made
      return Status(Errc::kSystem, "no room for " + std::to_string(bytes) + " bytes in " + dir + " (fallocate " +
                                       f.path_ + ": " + std::strerror(e) +
                                       "); enlarge it (e.g. docker --shm-size) or set CGDR_SHM_DIR");
    }
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd_, 0);
  if (p == MAP_FAILED) return sysError("mmap " + f.path_);
  f.data_ = p;
  f.size_ = bytes;
  return f;
}

void ShmFile::unlink() {
  if (unlinked_ || path_.empty()) return;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT)
    CGDR_LOG(kWarn, kShm, "unlink %s: %s", path_.c_str(), std::strerror(errno));
  unlinked_ = true;
}

void ShmFile::close() {
  if (data_) munmap(data_, size_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  fd_ = -1;
  size_ = 0;
}

int collectStale(const std::string& dir, double minAgeSeconds) {
  DIR* d = opendir(dir.c_str());
  if (!d) return 0;
  std::string prefix = shmPrefix();
  int removed = 0;
  time_t now = time(nullptr);
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) != 0) continue;
    std::string path = dir + "/" + e->d_name;
    struct stat st {};
    if (lstat(path.c_str(), &st) != 0 || st.st_uid != getuid()) continue;
    if (difftime(now, st.st_mtime) < minAgeSeconds) continue;
    if (S_ISSOCK(st.st_mode)) {
      // A socket whose owner is gone refuses connections; a live one is left alone.
      int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      bool stale = false;
      if (s >= 0 && path.size() < sizeof addr.sun_path) {
        std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
        stale = connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno == ECONNREFUSED;
      }
      if (s >= 0) ::close(s);
      if (stale && ::unlink(path.c_str()) == 0) ++removed;
      continue;
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
      ::unlink(path.c_str());
      ++removed;
      CGDR_LOG(kInfo, kShm, "removed stale %s", path.c_str());
    }
    ::close(fd);
  }
  closedir(d);
  return removed;
}

}  // namespace cgdr::base
