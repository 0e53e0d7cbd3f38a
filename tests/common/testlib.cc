#include "testlib.hpp"

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

#include "user_side.hpp"

namespace t {
namespace {
int gFailures = 0;
int gRank = -1;
int gSize = 0;

#if CGDR_HAVE_CUDA
void cudaOk(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "rank %d: %s: %s\n", gRank, what, cudaGetErrorString(e));
    std::abort();
  }
}
#endif
}  // namespace

const char* name(Kind k) {
  return k == Kind::H ? "H" : k == Kind::D ? "D" : k == Kind::M ? "M" : k == Kind::V ? "V" : "A";
}

bool gpuAvailable() { return cgdr::user::gpuPresent(); }

Buf::Buf(Kind k, std::size_t bytes) : k_(k), n_(bytes) {
  std::size_t alloc = bytes ? bytes : 1;
  if (k == Kind::H) {
    p_ = std::malloc(alloc);
  }
#if CGDR_HAVE_CUDA
  else if (k == Kind::D) {
    cudaOk(cudaMalloc(&p_, alloc), "cudaMalloc");
  } else if (k == Kind::V) {
    cgdr::user::VmmAlloc v;
    const char* what = "";
    if (!cgdr::user::vmmAlloc(alloc, &v, &what)) std::fprintf(stderr, "rank %d: %s failed\n", gRank, what);
    p_ = v.ptr;
    reserved_ = v.size;
  } else if (k == Kind::A) {
    cudaOk(cudaMallocAsync(&p_, alloc, 0), "cudaMallocAsync");
    cudaOk(cudaStreamSynchronize(0), "cudaStreamSynchronize");  // ready before MPI sees it
  } else {
    cudaOk(cudaMallocManaged(&p_, alloc), "cudaMallocManaged");
  }
#endif
  if (!p_) {
    std::fprintf(stderr, "rank %d: cannot allocate %zu bytes of %s memory\n", gRank, bytes, name(k));
    std::abort();
  }
  poison();
}

Buf::~Buf() {
  if (k_ == Kind::H) std::free(p_);
#if CGDR_HAVE_CUDA
  else if (k_ == Kind::V) cgdr::user::vmmFree({p_, reserved_});
  else if (k_ == Kind::A) cudaFreeAsync(p_, 0);  // back to the pool in stream order, no wait
  else cudaFree(p_);
#endif
}

void Buf::set(const std::vector<std::uint8_t>& bytes) {
  if (bytes.empty()) return;  // memcpy with a null pointer is undefined even for 0 bytes
  if (k_ == Kind::H) {
    std::memcpy(p_, bytes.data(), bytes.size());
    return;
  }
#if CGDR_HAVE_CUDA
  cudaOk(cudaMemcpy(p_, bytes.data(), bytes.size(), cudaMemcpyDefault), "cudaMemcpy to buffer");
  cudaOk(cudaDeviceSynchronize(), "sync");
#endif
}

void Buf::fill(std::uint32_t seed) { fill(seed, n_); }

void Buf::fill(std::uint32_t seed, std::size_t n, std::uint8_t poison) {
  std::vector<std::uint8_t> v(n_, poison);
  for (std::size_t i = 0; i < std::min(n, n_); ++i) v[i] = pat(seed, i);
  set(v);
}

void Buf::poison(std::uint8_t b) { set(std::vector<std::uint8_t>(n_, b)); }

std::vector<std::uint8_t> Buf::get() const {
  std::vector<std::uint8_t> v(n_);
  if (n_ == 0) return v;
  if (k_ == Kind::H) {
    std::memcpy(v.data(), p_, n_);
    return v;
  }
#if CGDR_HAVE_CUDA
  cudaOk(cudaDeviceSynchronize(), "sync");
  cudaOk(cudaMemcpy(v.data(), p_, n_, cudaMemcpyDefault), "cudaMemcpy from buffer");
#endif
  return v;
}

namespace {
// Bytes [n, v.size()) of a buffer's copy still hold the poison byte.
bool keptPoison(const std::vector<std::uint8_t>& v, std::size_t n, const char* what, std::uint8_t poisonByte) {
  for (std::size_t i = n; i < v.size(); ++i) {
    if (v[i] != poisonByte) {
      fail(__FILE__, __LINE__, "%s: byte %zu past the %zu received was overwritten (0x%02x)", what,
           i, n, v[i]);
      return false;
    }
  }
  return true;
}
}  // namespace

bool Buf::expect(std::uint32_t seed, std::size_t n, const char* what, std::uint8_t poisonByte) const {
  auto v = get();
  for (std::size_t i = 0; i < n && i < n_; ++i) {
    if (v[i] != pat(seed, i)) {
      fail(__FILE__, __LINE__, "%s: byte %zu of %zu is 0x%02x, expected 0x%02x (%s buffer)", what, i,
           n, v[i], pat(seed, i), name(k_));
      return false;
    }
  }
  return keptPoison(v, n, what, poisonByte);
}

bool Buf::untouchedPast(std::size_t n, const char* what, std::uint8_t poisonByte) const {
  return keptPoison(get(), n, what, poisonByte);
}

std::string arg(int argc, char** argv, const char* name, const char* fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return argv[i + 1];
  return fallback;
}

std::vector<std::pair<Kind, Kind>> kindPairs(int argc, char** argv) {
  std::string spec = arg(argc, argv, "--kinds", "HH");
  const Kind all[] = {Kind::H, Kind::D, Kind::M};
  std::vector<std::pair<Kind, Kind>> out;
  if (spec == "all" || spec == "gpu") {
    for (Kind a : all)
      for (Kind b : all)
        if (spec == "all" || a != Kind::H || b != Kind::H) out.emplace_back(a, b);
    return out;
  }
  auto kindOf = [&spec](char c) {
    switch (c) {
      case 'H': return Kind::H;
      case 'D': return Kind::D;
      case 'M': return Kind::M;
      case 'V': return Kind::V;
      case 'A': return Kind::A;
    }
    std::fprintf(stderr, "unknown buffer kind '%c' in --kinds %s (H, D, M, V or A)\n", c, spec.c_str());
    std::exit(2);
  };
  for (std::size_t i = 0; i + 1 < spec.size(); i += 3) out.emplace_back(kindOf(spec[i]), kindOf(spec[i + 1]));
  return out;
}

std::vector<std::size_t> sizes(int argc, char** argv) {
  std::string list = arg(argc, argv, "--sizes", "");
  if (!list.empty()) {  // "--sizes 0,1,8K+1,4M-1": around a channel's switch points and blocks
    std::vector<std::size_t> out;
    std::size_t pos = 0;
    while (pos <= list.size()) {
      std::size_t end = list.find(',', pos);
      if (end == std::string::npos) end = list.size();
      std::string item = list.substr(pos, end - pos);
      char* rest = nullptr;
      unsigned long long v = std::strtoull(item.c_str(), &rest, 0);
      if (*rest == 'K') v <<= 10, ++rest;
      else if (*rest == 'M') v <<= 20, ++rest;
      if (*rest == '+') v += std::strtoull(rest + 1, nullptr, 0);
      else if (*rest == '-') v -= std::strtoull(rest + 1, nullptr, 0);
      out.push_back(static_cast<std::size_t>(v));
      pos = end + 1;
    }
    return out;
  }
  std::size_t cap = std::strtoull(arg(argc, argv, "--max-size", "0").c_str(), nullptr, 0);
  std::vector<std::size_t> all = {0, 1, 3, 4095, kBlock - 1, kBlock, kBlock + 1, (64u << 20) + 7};
  std::vector<std::size_t> out;
  for (std::size_t s : all)
    if (cap == 0 || s <= cap) out.push_back(s);
  return out;
}

void setup(const std::vector<std::pair<Kind, Kind>>& pairs, const char* testName) {
  MPI_Comm_rank(MPI_COMM_WORLD, &gRank);
  MPI_Comm_size(MPI_COMM_WORLD, &gSize);
  bool needGpu = false;
  for (auto [a, b] : pairs) needGpu = needGpu || a != Kind::H || b != Kind::H;
  if (!needGpu) return;
  int ok = gpuAvailable() ? 1 : 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (gRank == 0) std::printf("SKIP %s: no usable GPU on this machine (GPU test)\n", testName);
    MPI_Finalize();
    std::exit(77);
  }
#if CGDR_HAVE_CUDA
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int lrank = 0, n = 1;
  MPI_Comm_rank(local, &lrank);
  MPI_Comm_free(&local);
  cudaGetDeviceCount(&n);
  cudaOk(cudaSetDevice(lrank % n), "cudaSetDevice");
#endif
}

void needGpus(int n, const char* testName) {
  int have = 0;
#if CGDR_HAVE_CUDA
  if (gpuAvailable() && cudaGetDeviceCount(&have) != cudaSuccess) have = 0;
#endif
  int fewest = 0;
  MPI_Allreduce(&have, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest >= n) return;
  if (gRank == 0) std::printf("SKIP %s: needs %d GPUs per rank's view, found %d (GPU test)\n", testName, n, fewest);
  MPI_Finalize();
  std::exit(77);
}

StderrCapture::StderrCapture() {
  std::fflush(stderr);
  char path[] = "/tmp/cgdr-test-stderr-XXXXXX";
  file_ = mkstemp(path);
  T_CHECK(file_ >= 0, "mkstemp(%s) for stderr: %s", path, std::strerror(errno));
  if (file_ < 0) return;
  unlink(path);
  saved_ = dup(STDERR_FILENO);
  T_CHECK(saved_ >= 0 && dup2(file_, STDERR_FILENO) >= 0, "redirecting stderr: %s", std::strerror(errno));
}

StderrCapture::~StderrCapture() {
  if (saved_ >= 0) (void)text();
  if (file_ >= 0) close(file_);
}

std::string StderrCapture::text() {
  std::string out;
  if (saved_ < 0) return out;
  std::fflush(stderr);
  dup2(saved_, STDERR_FILENO);
  close(saved_);
  saved_ = -1;
  char buf[4096];
  ssize_t n;
  for (off_t at = 0; (n = pread(file_, buf, sizeof buf, at)) > 0; at += n) out.append(buf, static_cast<size_t>(n));
  if (!out.empty()) std::fwrite(out.data(), 1, out.size(), stderr);
  return out;
}

int StderrCapture::linesWith(const std::string& text, const char* needle) {
  int lines = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.substr(at, end - at).find(needle) != std::string::npos) ++lines;
    at = end + 1;
  }
  return lines;
}

bool isMpich() {
  char v[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(v, &len);
  return std::strstr(v, "MPICH") != nullptr;
}

void* driverEntry(const char* name, unsigned version) {
  void* fn = nullptr;
#if CGDR_HAVE_CUDA
  cudaDriverEntryPointQueryResult q{};
  if (cudaGetDriverEntryPointByVersion(name, &fn, version, cudaEnableDefault, &q) != cudaSuccess ||
      q != cudaDriverEntryPointSuccess)
    fn = nullptr;
#endif
  T_CHECK(fn, "%s (CUDA %u form) from the driver", name, version);
  return fn;
}

void exchangeSizes(Kind sk, Kind rk, const std::vector<std::size_t>& sizes, int peer, int* msg, const char* phase,
                   const std::function<void(const std::string&)>& after) {
  for (std::size_t n : sizes) {
    Buf out(sk, n), in(rk, n);
    const int m = ++*msg;
    out.fill(seedOf(gRank, m));
    in.poison();
    T_MPI(MPI_Sendrecv(out.ptr(), static_cast<int>(n), MPI_BYTE, peer, m, in.ptr(), static_cast<int>(n), MPI_BYTE, peer,
                       m, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    std::string what = std::string(name(sk)) + "->" + name(rk) + " " + std::to_string(n) + " B (" + phase + ")";
    in.expect(seedOf(peer, m), n, what.c_str());
    if (after) after(what);
  }
}

int rank() { return gRank; }
int size() { return gSize; }

void fail(const char* file, int line, const char* fmt, ...) {
  ++gFailures;
  if (gFailures > 20) return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "rank %d: FAIL %s:%d: %s\n", gRank, file, line, msg);
}

int failures() { return gFailures; }

int finish(const char* testName) {
  int total = 0;
  MPI_Allreduce(&gFailures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (gRank == 0) std::printf("%s %s (%d failures)\n", total ? "FAIL" : "PASS", testName, total);
  MPI_Finalize();
  return total ? 1 : 0;
}

int errorClass(int rc) {
  int cls = -1;
  if (MPI_Error_class(rc, &cls) != MPI_SUCCESS) return -1;
  return cls;
}

void checkStatus(const MPI_Status& st, int src, int tag, std::size_t n, const char* what) {
  int count = -1;
  MPI_Get_count(&st, MPI_BYTE, &count);
  T_CHECK(st.MPI_SOURCE == src && st.MPI_TAG == tag && count == static_cast<int>(n),
          "%s: status source %d tag %d count %d, expected %d %d %zu", what, st.MPI_SOURCE, st.MPI_TAG, count, src, tag, n);
}

bool refusedWith(int rc, const char* cause, std::string* text) {
  char s[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, s, &len);
  *text = s;
  return errorClass(rc) == MPI_ERR_BUFFER && std::strstr(s, cause) != nullptr;
}

bool failedAs(int rc, int cls, const char* cgdrText, std::string* text) {
  return failedAs(rc, std::vector<int>{cls}, cgdrText, text);
}

bool failedAs(int rc, const std::vector<int>& cls, const char* cgdrText, std::string* text) {
  text->clear();
  if (rc == MPI_SUCCESS) return false;
  char s[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, s, &len);
  *text = s;
  for (int c : cls)
    if (errorClass(rc) == c) return true;
  return cgdrText && std::strstr(s, cgdrText) != nullptr;
}

namespace {

// What the counting handler saw since expectRefused last reset it.
struct Seen {
  int calls = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  int code = MPI_SUCCESS;
} gSeen;

void countingHandler(MPI_Comm* comm, int* code, ...) {
  ++gSeen.calls;
  gSeen.comm = *comm;
  gSeen.code = *code;
}

std::string classList(const std::vector<int>& cls) {
  std::string s;
  for (int c : cls) s += (s.empty() ? "" : " or ") + std::to_string(c);
  return s;
}

}  // namespace

MPI_Errhandler countingErrhandler() {
  MPI_Errhandler h = MPI_ERRHANDLER_NULL;
  MPI_Comm_create_errhandler(countingHandler, &h);
  return h;
}

int expectRefused(const std::function<int()>& call, const std::vector<int>& expect, const char* cgdrText,
                  MPI_Comm comm, const std::string& what) {
  gSeen = Seen{};
  int rc;
  {
    Deadline d(60, what);
    rc = call();
  }
  std::string text;
  T_CHECK(failedAs(rc, expect, cgdrText, &text), "%s: returned %d, class %d (\"%s\"), expected class %s", what.c_str(),
          rc, rc == MPI_SUCCESS ? 0 : errorClass(rc), text.c_str(), classList(expect).c_str());
  T_CHECK(gSeen.calls == 1, "%s: the error handler was called %d times", what.c_str(), gSeen.calls);
  T_CHECK(gSeen.calls == 0 || comm == MPI_COMM_NULL || gSeen.comm == comm,
          "%s: the handler of another communicator was called", what.c_str());
  T_CHECK(gSeen.calls == 0 || gSeen.code == rc, "%s: the handler saw code %d, the call returned %d", what.c_str(),
          gSeen.code, rc);
  return rc;
}

struct Deadline::State {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread watcher;
};

Deadline::Deadline(int seconds, std::string what) : state_(new State) {
  state_->watcher = std::thread([st = state_, seconds, what = std::move(what)] {
    std::unique_lock<std::mutex> lock(st->m);
    if (st->cv.wait_for(lock, std::chrono::seconds(seconds), [st] { return st->done; })) return;
    std::fprintf(stderr, "FAIL [rank %d] %s: did not return in %d s\n", gRank, what.c_str(), seconds);
    std::fflush(stderr);
    std::_Exit(3);
  });
}

Deadline::~Deadline() {
  {
    std::lock_guard<std::mutex> lock(state_->m);
    state_->done = true;
  }
  state_->cv.notify_one();
  state_->watcher.join();
  delete state_;
}

RefusedSends::RefusedSends(int peer, const std::vector<int>& tags, std::size_t maxBytes)
    : sink_(tags.size() * maxBytes), rs_(tags.size(), MPI_REQUEST_NULL) {
  for (std::size_t i = 0; i < tags.size(); ++i)
    T_MPI(MPI_Irecv(sink_.data() + i * maxBytes, static_cast<int>(maxBytes), MPI_BYTE, peer, tags[i], MPI_COMM_WORLD,
                    &rs_[i]));
}

void RefusedSends::check(const char* what) {
  MPI_Barrier(MPI_COMM_WORLD);
  for (MPI_Request& r : rs_) {
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    T_CHECK(!done, "%s: a send the peer should have refused arrived", what);
    if (!done) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  // Until every rank's receives are gone, a peer past the first barrier could send its next
  // message into one of them (a wildcard tag matches it).
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace t
