// Shared files: created 0600, refused when someone else's, unlinked while mapped, and stale
// files (their job killed: nobody holds them) collected while live ones stay; the random words
// that name and probe them, also where a seccomp filter denies getrandom.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

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

namespace {
// Draws n words; 0 when all are non-zero and distinct, else the index of the first bad one + 1.
int badWord(int n) {
  std::set<std::uint64_t> seen;
  for (int i = 0; i < n; ++i) {
    std::uint64_t w = randomWord();
    if (w == 0 || !seen.insert(w).second) return i + 1;
  }
  return 0;
}
}  // namespace

TEST(RandomWord, NonZeroAndDistinct) { EXPECT_EQ(badWord(1000), 0); }

// A container runtime's seccomp profile may deny getrandom: the words must still come, non-zero
// and distinct, without spinning. The child installs a real filter (EPERM for getrandom), checks
// that the call now fails, and reports through its exit code; an alarm turns a hang into SIGALRM.
TEST(RandomWord, WhereGetrandomIsDenied) {
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(20);
    sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog prog{static_cast<unsigned short>(sizeof code / sizeof code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) _exit(2);
    std::uint64_t probe = 0;
    errno = 0;
    if (syscall(SYS_getrandom, &probe, sizeof probe, 0) != -1 || errno != EPERM) _exit(3);
    _exit(badWord(1000) == 0 ? 0 : 4);
  }
  int st = 0;
  ASSERT_EQ(waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st)) << "child died of signal " << (WIFSIGNALED(st) ? WTERMSIG(st) : 0)
                             << (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM ? " (hung)" : "");
  EXPECT_NE(WEXITSTATUS(st), 2) << "could not install the seccomp filter";
  EXPECT_NE(WEXITSTATUS(st), 3) << "the filter did not deny getrandom";
  EXPECT_EQ(WEXITSTATUS(st), 0) << "a word was zero or repeated without getrandom";
}
