// Shared files: created 0600, refused when someone else's, unlinked while mapped, and stale
// files (their job killed: nobody holds them) collected while live ones stay.
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/shm_file.hpp"

using namespace cgdr::base;
namespace fs = std::filesystem;

namespace {
struct TmpDir {
  std::string path;
  TmpDir() {
    char t[] = "/tmp/cgdr-shmtest-XXXXXX";
    path = mkdtemp(t);
  }
  ~TmpDir() { fs::remove_all(path); }
};
void age(const std::string& p) {
  struct timespec ts[2] = {{time(nullptr) - 60, 0}, {time(nullptr) - 60, 0}};
  utimensat(AT_FDCWD, p.c_str(), ts, AT_SYMLINK_NOFOLLOW);
}
}  // namespace

TEST(ShmFile, PrivateAndShared) {
  TmpDir d;
  auto a = ShmFile::open(d.path, shmPrefix() + "x", 8192);
  ASSERT_TRUE(a.isOk()) << a.status().message();
  struct stat st {};
  ASSERT_EQ(stat(a.value().path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto b = ShmFile::open(d.path, shmPrefix() + "x", 8192, false);
  ASSERT_TRUE(b.isOk());
  static_cast<char*>(a.value().data())[100] = 42;
  EXPECT_EQ(static_cast<char*>(b.value().data())[100], 42);
  a.value().unlink();
  EXPECT_FALSE(fs::exists(a.value().path()));
  static_cast<char*>(b.value().data())[101] = 43;  // mappings outlive the name
  EXPECT_EQ(static_cast<char*>(a.value().data())[101], 43);
}

TEST(ShmFile, RefusesFilesOthersCanRead) {
  TmpDir d;
  std::string p = d.path + "/" + shmPrefix() + "open";
  int fd = ::open(p.c_str(), O_CREAT | O_RDWR, 0644);
  fchmod(fd, 0644);
  ::close(fd);
  auto f = ShmFile::open(d.path, shmPrefix() + "open", 4096);
  EXPECT_FALSE(f.isOk());
  EXPECT_NE(f.status().message().find("not a private regular file"), std::string::npos);
  fs::create_symlink("/etc/passwd", d.path + "/" + shmPrefix() + "link");
  EXPECT_FALSE(ShmFile::open(d.path, shmPrefix() + "link", 4096).isOk());
}

TEST(ShmFile, CollectsOnlyStaleFiles) {
  TmpDir d;
  {
    auto dead = ShmFile::open(d.path, shmPrefix() + "dead", 4096);  // closed: like a killed job
    ASSERT_TRUE(dead.isOk());
  }
  auto live = ShmFile::open(d.path, shmPrefix() + "live", 4096);
  ASSERT_TRUE(live.isOk());
  {
    auto young = ShmFile::open(d.path, shmPrefix() + "young", 4096);
  }
  std::string other = d.path + "/somebody-else";
  std::ofstream(other) << "x";
  age(d.path + "/" + shmPrefix() + "dead");
  age(d.path + "/" + shmPrefix() + "live");
  age(other);
  // A stale socket (nobody listens) and a live one.
  auto sock = [&](const std::string& name, bool listening) {
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::string p = d.path + "/" + name;
    std::strcpy(a.sun_path, p.c_str());
    bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a);
    if (listening) listen(s, 1);
    else ::close(s);
    age(p);
    return s;
  };
  sock(shmPrefix() + "deadsock", false);
  int liveSock = sock(shmPrefix() + "livesock", true);
  EXPECT_EQ(collectStale(d.path), 2);
  EXPECT_FALSE(fs::exists(d.path + "/" + shmPrefix() + "dead"));
  EXPECT_FALSE(fs::exists(d.path + "/" + shmPrefix() + "deadsock"));
  EXPECT_TRUE(fs::exists(d.path + "/" + shmPrefix() + "live"));
  EXPECT_TRUE(fs::exists(d.path + "/" + shmPrefix() + "young"));  // may belong to a job starting now
  EXPECT_TRUE(fs::exists(d.path + "/" + shmPrefix() + "livesock"));
  EXPECT_TRUE(fs::exists(other));
  ::close(liveSock);
}
