#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "bench.hpp"

#include "user_side.hpp"

namespace bench {


Loc parseLoc(const std::string& s) {
  if (s == "D" || s == "cuda" || s == "device") return Loc::kDevice;
  if (s == "M" || s == "managed") return Loc::kManaged;
  if (s == "H" || s == "host") return Loc::kHost;
  if (s == "V" || s == "vmm") return Loc::kVmm;
  if (s == "A" || s == "pool") return Loc::kPool;
  std::fprintf(stderr, "cgdr-bench: unknown buffer location '%s' (H, D, M, V, A)\n", s.c_str());
  std::exit(2);
}

const char* locName(Loc l) {
  switch (l) {
    case Loc::kHost: return "HOST";
    case Loc::kDevice: return "DEVICE";
    case Loc::kManaged: return "MANAGED";
    case Loc::kVmm: return "VMM";
    case Loc::kPool: return "POOL";
  }
  return "?";
}
const char* locLetter(Loc l) {
  switch (l) {
    case Loc::kHost: return "H";
    case Loc::kDevice: return "D";
    case Loc::kManaged: return "M";
    case Loc::kVmm: return "V";
    case Loc::kPool: return "A";
  }
  return "?";
}

void selectGpu(const Options& o) {
#if CGDR_HAVE_CUDA
  if (o.send == Loc::kHost && o.recv == Loc::kHost) return;
  int n = 0;
  cudaGetDeviceCount(&n);
  int dev = o.gpu;
  if (dev < 0) {
    MPI_Comm local;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    int lr = 0;
    MPI_Comm_rank(local, &lr);
    MPI_Comm_free(&local);
    dev = lr % (n > 0 ? n : 1);
  }
  cudaSetDevice(dev);
#else
  (void)o;
#endif
}

Buffer::Buffer(Loc l, std::size_t bytes) : loc_(l) {
  std::size_t n = bytes ? bytes : 1;
  if (l == Loc::kHost) {
    if (posix_memalign(&p_, 4096, n) != 0) p_ = nullptr;
  }
#if CGDR_HAVE_CUDA
  else if (l == Loc::kDevice) {
    if (cudaMalloc(&p_, n) != cudaSuccess) p_ = nullptr;
  } else if (l == Loc::kVmm) {
    cgdr::user::VmmAlloc v;
    const char* what = "";
    if (!cgdr::user::vmmAlloc(n, &v, &what)) std::fprintf(stderr, "cgdr-bench: %s failed\n", what);
    p_ = v.ptr;
    mapped_ = v.size;
  } else if (l == Loc::kPool) {
    if (cudaMallocAsync(&p_, n, 0) != cudaSuccess || cudaStreamSynchronize(0) != cudaSuccess) p_ = nullptr;
  } else if (cudaMallocManaged(&p_, n) != cudaSuccess) {
    p_ = nullptr;
  }
#endif
  if (!p_) {
    std::fprintf(stderr, "cgdr-bench: cannot allocate %zu bytes of %s memory\n", bytes, locName(l));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  fill(0, n);
}

Buffer::~Buffer() {
  if (loc_ == Loc::kHost) std::free(p_);
#if CGDR_HAVE_CUDA
  else if (loc_ == Loc::kVmm) cgdr::user::vmmFree({p_, mapped_});
  else if (loc_ == Loc::kPool) {
    cudaFreeAsync(p_, 0);
    cudaStreamSynchronize(0);
  } else {
    cudaFree(p_);
  }
#endif
}

void Buffer::fill(unsigned char v, std::size_t n) {
  if (loc_ == Loc::kHost) {
    std::memset(p_, v, n);
    return;
  }
#if CGDR_HAVE_CUDA
  cudaMemset(p_, v, n);
  cudaDeviceSynchronize();
#endif
}

void Buffer::upload(const void* src, std::size_t n) {
  if (loc_ == Loc::kHost) {
    std::memcpy(p_, src, n);
    return;
  }
#if CGDR_HAVE_CUDA
  cudaMemcpy(p_, src, n, cudaMemcpyDefault);
  cudaDeviceSynchronize();
#endif
}

void Buffer::download(void* dst, std::size_t n) const {
  if (loc_ == Loc::kHost) {
    std::memcpy(dst, p_, n);
    return;
  }
#if CGDR_HAVE_CUDA
  cudaDeviceSynchronize();
  cudaMemcpy(dst, p_, n, cudaMemcpyDefault);
#endif
}

static unsigned char patternByte(unsigned seed, std::size_t i) {
  return static_cast<unsigned char>((seed * 2654435761u) ^ (i * 40503u) ^ (i >> 8));
}

void Buffer::fillPattern(unsigned seed, std::size_t n) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = patternByte(seed, i);
  upload(v.data(), n);
}

bool Buffer::checkPattern(unsigned seed, std::size_t n) const {
  std::vector<unsigned char> v(n);
  download(v.data(), n);
  for (std::size_t i = 0; i < n; ++i)
    if (v[i] != patternByte(seed, i)) return false;
  return true;
}

std::vector<std::size_t> sizes(const Options& o) {
  std::vector<std::size_t> out;
  if (o.minSize == 0) out.push_back(0);
  for (std::size_t s = 1; s <= o.maxSize; s *= 2)
    if (s >= o.minSize) out.push_back(s);
  return out;
}

// OSU: latency and collectives 10000/100 iterations below 8 KiB and 1000/10 above
// (LARGE_MESSAGE_SIZE = 8192); the windowed bw/bibw 100/10 and 20/2 (each iteration moves a window).
namespace {
bool windowed(const Options& o) { return o.test == "bw" || o.test == "bibw"; }
}  // namespace

int itersFor(const Options& o, std::size_t size) {
  if (size > 8192) return o.itersLarge > 0 ? o.itersLarge : (o.iters > 0 ? o.iters : windowed(o) ? 20 : 1000);
  return o.iters > 0 ? o.iters : windowed(o) ? 100 : 10000;
}
int warmupFor(const Options& o, std::size_t size) {
  if (size > 8192) return o.warmupLarge >= 0 ? o.warmupLarge : (o.warmup >= 0 ? o.warmup : windowed(o) ? 2 : 10);
  return o.warmup >= 0 ? o.warmup : windowed(o) ? 10 : 100;
}

Report p2pReport(const std::string& test) {
  Report r;
  r.title = test == "latency" ? "Latency Test" : test == "bw" ? "Bandwidth Test" : "Bi-Directional Bandwidth Test";
  r.unit = test == "latency" ? "Latency (us)" : "Bandwidth (MB/s)";
  return r;
}

void printHeader(const Options& o, const Report& r, bool collective) {
  std::printf("# cgdr-bench %s (OSU-compatible output)\n", r.title.c_str());
  if (collective) {
    std::printf("# Datatype: %s. Buffers on %s\n", o.datatype, locName(o.send));
    if (r.unit == "Overlap")
      std::printf("%-10s%18s%18s%18s%18s\n", "# Size", "Overall(us)", "Compute(us)", "Pure Comm.(us)", "Overlap(%)");
    else if (o.full)
      std::printf("%-10s%18s%18s%18s%12s\n", "# Size", "Avg Latency(us)", "Min Latency(us)", "Max Latency(us)", "Iterations");
    else
      std::printf("%-10s%18s\n", "# Size", "Avg Latency(us)");
  } else {
    std::printf("# Send Buffer on %s (%s) and Receive Buffer on %s (%s)\n", locName(o.send), locLetter(o.send),
                locName(o.recv), locLetter(o.recv));
    if (o.buffers > 1) std::printf("# %d buffers per side, each message the next one\n", o.buffers);
    std::printf("%-10s%18s\n", "# Size", r.unit.c_str());
  }
  std::fflush(stdout);
}

void printRow(const Options& o, const Row& row, bool collective) {
  if (collective && row.extra >= 0)
    std::printf("%-10zu%18.2f%18.2f%18.2f%18.2f", row.size, row.value, row.min, row.max, row.extra);
  else if (collective && o.full)
    std::printf("%-10zu%18.2f%18.2f%18.2f%12d", row.size, row.value, row.min, row.max, itersFor(o, row.size));
  else
    std::printf("%-10zu%18.2f", row.size, row.value);
  if (o.validate) std::printf("%12s", row.valid ? "Pass" : "FAIL");
  std::printf("\n");
  std::fflush(stdout);
}

void writeJson(const Options& o, const Report& r) {
  if (o.json.empty()) return;
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  for (char* c = lib; *c; ++c)
    if (*c == '\n' || *c == '"' || *c == '\\') *c = ' ';
  int np = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char* pre = std::getenv("LD_PRELOAD");
  std::string out = "{\"benchmark\": \"" + o.test + "\", \"send\": \"" + locLetter(o.send) + "\", \"recv\": \"" +
                    locLetter(o.recv) + "\", \"ranks\": " + std::to_string(np) + ", \"unit\": \"" + r.unit +
                    "\", \"transport\": \"" + o.transport + "\", \"cgdr_preloaded\": " + (pre && std::strstr(pre, "libcgdr") ? "true" : "false") +
                    ", \"mpi\": \"" + std::string(lib, std::strlen(lib) > 60 ? 60 : std::strlen(lib)) +
                    "\", \"results\": [";
  for (std::size_t i = 0; i < r.rows.size(); ++i) {
    char row[256];
    const Row& x = r.rows[i];
    std::snprintf(row, sizeof row, "%s{\"size\": %zu, \"value\": %.4f, \"min\": %.4f, \"max\": %.4f, \"valid\": %s%s}",
                  i ? ", " : "", x.size, x.value, x.min, x.max, x.valid ? "true" : "false",
                  x.extra >= 0 ? (", \"overlap\": " + std::to_string(x.extra)).c_str() : "");
    out += row;
  }
  out += "]}\n";
  if (o.json == "-") {
    std::fputs(out.c_str(), stdout);
  } else {
    std::ofstream f(o.json);
    f << out;
  }
}

}  // namespace bench
