// The sys ids of base: mix64 (splitmix64's finaliser, checked against splitmix64's published
// first outputs and for how evenly one flipped input bit spreads), the copy identities built on
// it, and the random words that name and probe shared files, also where a seccomp filter denies
// getrandom.
#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <set>

#include "base/ids.hpp"
#include "mem/gpu_copy.hpp"

using namespace cgdr::base;

// splitmix64 from state 0 yields mix64 of 1, 2, 3 times the gamma: its well-known first words.
TEST(Mix64, MatchesSplitmix64) {
  EXPECT_EQ(mix64(kGoldenGamma), 0xe220a8397b1dcdafull);
  EXPECT_EQ(mix64(2 * kGoldenGamma), 0x6e789e6aa1b965f4ull);
  EXPECT_EQ(mix64(3 * kGoldenGamma), 0x06c45d188009454full);
  EXPECT_EQ(mix64(0), 0u);
}

// Small and structured inputs (counters, ranks, single bits) give distinct words, and flipping
// one input bit flips about half of the output bits.
TEST(Mix64, DistinctAndSpreads) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t i = 0; i < 100000; ++i) ASSERT_TRUE(seen.insert(mix64(i)).second) << i;
  std::set<std::uint64_t> bits;
  for (int b = 0; b < 64; ++b) ASSERT_TRUE(bits.insert(mix64(std::uint64_t{1} << b)).second) << b;
  double flips = 0;
  int n = 0;
  const std::uint64_t inputs[] = {0, 1, 12345, 0xffffffff, kGoldenGamma, ~std::uint64_t{0}};
  for (std::uint64_t x : inputs)
    for (int b = 0; b < 64; ++b, ++n) flips += std::popcount(mix64(x) ^ mix64(x ^ (std::uint64_t{1} << b)));
  EXPECT_GT(flips / n, 28.0);
  EXPECT_LT(flips / n, 36.0);
}

// Copy identities: non-zero, distinct over a grid of parts, and the order of the parts counts
// (a peer's rank and a buffer id must not collide with the reverse).
TEST(CopyId, DistinctNonZeroAndOrdered) {
  std::set<std::uint64_t> seen;
  for (std::uint64_t a = 0; a < 300; ++a)
    for (std::uint64_t b = 0; b < 300; ++b) {
      std::uint64_t h = cgdr::mem::copyId(a, b);
      ASSERT_NE(h, 0u);
      ASSERT_TRUE(seen.insert(h).second) << a << "," << b;
    }
  EXPECT_NE(cgdr::mem::copyId(1, 2), cgdr::mem::copyId(2, 1));
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
// Where this kernel or sandbox lets no filter be installed, the test skips and says so.
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
  if (WEXITSTATUS(st) == 2) GTEST_SKIP() << "this kernel or sandbox refused to install a seccomp filter";
  EXPECT_NE(WEXITSTATUS(st), 3) << "the filter did not deny getrandom";
  EXPECT_EQ(WEXITSTATUS(st), 0) << "a word was zero or repeated without getrandom";
}
