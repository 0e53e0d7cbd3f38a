// Helpers for cgdr's multi-process tests: buffers of each kind (host, device, managed), byte
// patterns that differ per rank, per message and per offset, checks that count failures, and a
// collective verdict. The same test runs on host memory in CI and on GPU memory where GPUs exist.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace t {

// H host, D device (cudaMalloc), M managed, V device memory made with cuMemCreate and exportable
// as a file descriptor (what PyTorch's expandable segments and NCCL use; shared without a copy),
// A stream-ordered memory from the device's default pool (cudaMallocAsync, what PyTorch's
// cudaMallocAsync backend and RAPIDS use): no legacy IPC handle and no fd, and a freed block is
// handed out again at once, often at the same address.
enum class Kind { H, D, M, V, A };
const char* name(Kind k);

// Byte `off` of the pattern identified by seed (use seedOf to make seeds).
inline std::uint8_t pat(std::uint32_t seed, std::size_t off) {
  std::uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ull + (off + 1) * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  x *= 0x94D049BB133111EBull;
  x ^= x >> 32;
  return static_cast<std::uint8_t>(x);
}
inline std::uint32_t seedOf(int rank, int msg, int extra = 0) {
  return static_cast<std::uint32_t>(rank) * 1000003u + static_cast<std::uint32_t>(msg) * 7919u +
         static_cast<std::uint32_t>(extra) * 104729u;
}

// A test buffer of one kind; all access goes through host copies so it works for every kind.
class Buf {
 public:
  Buf(Kind k, std::size_t bytes);
  ~Buf();
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  void* ptr() const { return p_; }
  std::size_t size() const { return n_; }
  Kind kind() const { return k_; }
  void fill(std::uint32_t seed);              // whole buffer = pattern(seed)
  // Bytes [0, n) = pattern(seed), [n, size) = the poison byte (what expect(seed, n, ...) checks).
  void fill(std::uint32_t seed, std::size_t n, std::uint8_t poison = 0xA5);
  void set(const std::vector<std::uint8_t>& bytes);
  void poison(std::uint8_t v = 0xA5);
  std::vector<std::uint8_t> get() const;
  // Checks bytes [0, n) equal pattern(seed) and [n, size) still hold the poison byte.
  bool expect(std::uint32_t seed, std::size_t n, const char* what, std::uint8_t poison = 0xA5) const;
  // Checks only that bytes [n, size) still hold the poison byte (e.g. past a truncated receive).
  bool untouchedPast(std::size_t n, const char* what, std::uint8_t poison = 0xA5) const;

 private:
  Kind k_;
  std::size_t n_;
  void* p_ = nullptr;
  std::size_t reserved_ = 0;          // V: the mapped size
};

// Parses "--kinds XY[,XY...]" or "all" (every pair of H, D, M) or "gpu" (those with a GPU side);
// X and Y are H, D, M, V or A.
// Returns the (sender, receiver) kind pairs; defaults to H->H.
std::vector<std::pair<Kind, Kind>> kindPairs(int argc, char** argv);
// Value of "--name value" or fallback.
std::string arg(int argc, char** argv, const char* name, const char* fallback);

// Must follow MPI_Init: selects a GPU per local rank if any kind needs one, or exits with the
// skip code (77) and a visible message when none is usable.
void setup(const std::vector<std::pair<Kind, Kind>>& pairs, const char* testName);
// After setup: exits with the skip code (77) and a visible message unless every rank sees at
// least n GPUs (tests of paths between two GPUs; "--min-gpus N").
void needGpus(int n, const char* testName);

int rank();
int size();

// Records a failure (prints rank, file, line and message).
void fail(const char* file, int line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
int failures();
// Collective: sums failures, prints PASS/FAIL on rank 0, returns the exit code.
int finish(const char* testName);

// Message sizes every data test uses: 0, 1, 3, 4095, one block +-1, and 64 MiB + 7 (large
// sizes can be capped with --max-size for quick runs). "--sizes 0,1,8K+1,4M-1" replaces the list.
std::vector<std::size_t> sizes(int argc, char** argv);
constexpr std::size_t kBlock = 256 * 1024;

bool gpuAvailable();

// The error class of an MPI return code (MPI_SUCCESS for MPI_SUCCESS, -1 where the MPI knows no
// class for it).
int errorClass(int rc);
// Checks a receive's status: source, tag and a count of n bytes.
void checkStatus(const MPI_Status& st, int src, int tag, std::size_t n, const char* what);
// Whether an MPI call's return code is MPI_ERR_BUFFER with `cause` in its error string (which
// *text receives, for the failure message).
bool refusedWith(int rc, const char* cause, std::string* text);
// Whether an MPI call failed with error class `cls` or, where cgdrText is given, with that text in
// its error string (cgdr's own errors: a class of their own on MPICH, "cgdr: invalid argument" for
// example). *text receives the error string ("" for MPI_SUCCESS), for the failure message.
bool failedAs(int rc, int cls, const char* cgdrText, std::string* text);
// The same for a call the MPI may refuse with any of the classes `cls`.
bool failedAs(int rc, const std::vector<int>& cls, const char* cgdrText, std::string* text);
// An error handler that counts its calls and returns (MPI_ERRORS_RETURN's behaviour, seen by
// expectRefused); the caller frees it.
MPI_Errhandler countingErrhandler();
// Runs `call`, which must be refused: return within 60 s (Deadline), with one of the classes
// `expect` (or, given cgdrText, that text in its error string), having called the counting
// handler once with the code it returned, that of `comm` where comm is not MPI_COMM_NULL.
// `what` names the call in failure messages. Returns the call's code.
int expectRefused(const std::function<int()>& call, const std::vector<int>& expect, const char* cgdrText,
                  MPI_Comm comm, const std::string& what);
// Ends the process, naming `what`, should it live `seconds` more before this is destroyed: a call
// that must return at once and blocks instead (a receive posted beside a refused send, an exchange
// whose partner was wrongly refused) fails the test in seconds, with the call's name, rather than
// at the run's timeout.
class Deadline {
 public:
  Deadline(int seconds, std::string what);
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  struct State;
  State* state_;
};
// Receives from `peer` into host memory, one per tag, posted before sends that must be refused:
// a send wrongly let through then fails check() instead of hanging the test. check() is
// collective (a barrier, then every receive must still be pending; they are cancelled; a barrier).
class RefusedSends {
 public:
  RefusedSends(int peer, const std::vector<int>& tags, std::size_t maxBytes);
  void check(const char* what);

 private:
  std::vector<char> sink_;
  std::vector<MPI_Request> rs_;
};
// What this process writes to stderr (cgdr's log) between its construction and text(), which
// then writes it on to stderr as well (the test's output keeps it).
class StderrCapture {
 public:
  StderrCapture();
  ~StderrCapture();
  std::string text();
  // How many lines of the text hold `needle`.
  static int linesWith(const std::string& text, const char* needle);

 private:
  int saved_ = -1;
  int file_ = -1;
};
// The MPI library is MPICH (some checks avoid known MPICH 4.0 bugs, with a note).
bool isMpich();

// The driver's entry point `name` in the form of CUDA `version` (12050: cuCtxCreate_v4); a test
// failure and nullptr where the driver has none (or the build has no CUDA).
void* driverEntry(const char* name, unsigned version);
// Every size both ways at once (MPI_Sendrecv with `peer`, message number and tag ++*msg), from a
// buffer of kind sk into one of kind rk, both made for it with the context current then; every
// byte checked. `after`, where given, runs after each call with what it moved ("D->H 4097 B
// (phase)").
void exchangeSizes(Kind sk, Kind rk, const std::vector<std::size_t>& sizes, int peer, int* msg, const char* phase,
                   const std::function<void(const std::string&)>& after = nullptr);

}  // namespace t

#define T_CHECK(cond, ...)                                         \
  do {                                                             \
    if (!(cond)) ::t::fail(__FILE__, __LINE__, __VA_ARGS__);       \
  } while (0)

#define T_MPI(call)                                                                    \
  do {                                                                                 \
    int rc_ = (call);                                                                  \
    if (rc_ != MPI_SUCCESS) ::t::fail(__FILE__, __LINE__, "%s returned %d", #call, rc_); \
  } while (0)
