// cgdr-bench: OSU-style MPI benchmarks with the buffer location chosen per side. It is an ordinary
// MPI program: it does not link cgdr, so the same binary measures the plain MPI and, preloaded
// (cgdr-run or LD_PRELOAD), cgdr.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace bench {

// kVmm: device memory from cuMemCreate, exportable as a file descriptor (as PyTorch's expandable
// segments and NCCL allocate): co-located ranks can share it without a copy.
// kPool: stream-ordered memory from the device's default pool (cudaMallocAsync).
enum class Loc { kHost, kDevice, kManaged, kVmm, kPool };
Loc parseLoc(const std::string& s);  // H/D/M/V/A or host/cuda/managed/vmm/pool
const char* locName(Loc l);          // HOST / DEVICE / MANAGED / VMM / POOL
const char* locLetter(Loc l);        // H / D / M / V / A

struct Options {
  std::string test;
  Loc send = Loc::kHost, recv = Loc::kHost;
  std::size_t minSize = 0, maxSize = 4u << 20;
  bool sizesGiven = false;
  int iters = -1, warmup = -1;          // -1: OSU's defaults by message size
  int itersLarge = -1, warmupLarge = -1;
  int window = 64;
  int buffers = 1;                      // -B: messages use this many buffers per side in turn
  bool windowGiven = false;
  bool validate = false;
  bool full = false;                    // -f: min/max/iterations columns, as OSU
  const char* datatype = "MPI_CHAR";
  std::string json;                     // file path, "-" for stdout, empty for none
  int gpu = -1;                         // device ordinal; -1: local rank modulo device count
  std::string nccl;                     // --nccl LIB: the point-to-point tests through NCCL (nccl.cc)
  bool ncclBlocking = false;            // --nccl-blocking: the stream synchronized after every NCCL call
  std::string transport = "MPI";        // what moved the bytes (the JSON's "transport")
};

// A buffer of one location; memory is allocated once at the largest size.
class Buffer {
 public:
  Buffer(Loc l, std::size_t bytes);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return p_; }
  Loc loc() const { return loc_; }
  void fill(unsigned char v, std::size_t n);
  // Fills n bytes with a pattern seeded by seed / checks them (validation).
  void fillPattern(unsigned seed, std::size_t n);
  bool checkPattern(unsigned seed, std::size_t n) const;
  // Copies n bytes from host memory / to host memory.
  void upload(const void* src, std::size_t n);
  void download(void* dst, std::size_t n) const;

 private:
  Loc loc_;
  std::size_t mapped_ = 0;            // kVmm
  void* p_ = nullptr;
};

void selectGpu(const Options& o);

// One side's buffers of a point-to-point test (-B): message k uses the k-th modulo their count.
struct Buffers {
  std::vector<std::unique_ptr<Buffer>> all;
  Buffers(Loc l, std::size_t bytes, int count) {
    for (int i = 0; i < count; ++i) all.push_back(std::make_unique<Buffer>(l, bytes));
  }
  void* operator[](long k) const { return all[static_cast<std::size_t>(k) % all.size()]->data(); }
};

// One row of results; value is latency (us) or bandwidth (MB/s).
struct Row {
  std::size_t size;
  double value;
  double min = 0, max = 0;      // collectives: min/max over ranks
  bool valid = true;
  double extra = -1;            // non-blocking collectives: overlap (%)
};

struct Report {
  std::string title, unit;
  std::vector<Row> rows;
};

// The report of a point-to-point test (latency, bw, bibw): its title and unit, as OSU's.
Report p2pReport(const std::string& test);
void printHeader(const Options& o, const Report& r, bool collective);
void printRow(const Options& o, const Row& row, bool collective);
void writeJson(const Options& o, const Report& r);

// Sizes 0 (if min is 0), then powers of two up to max.
std::vector<std::size_t> sizes(const Options& o);
int itersFor(const Options& o, std::size_t size);
int warmupFor(const Options& o, std::size_t size);

// Benchmarks; each returns the report rows on rank 0.
int runPt2pt(const Options& o);
int runCollective(const Options& o);
// alloc D|A: the cost of cudaMalloc+cudaFree / cudaMallocAsync+cudaFreeAsync pairs (alloc.cc).
int runAlloc(const Options& o);
// --nccl: loads NCCL from LIB (an error message, empty on success), then runs latency/bw/bibw
// through ncclSend/ncclRecv between ranks 0 and 1 (exactly 2 ranks), MPI only bootstrapping.
std::string loadNccl(const std::string& lib);
int runNccl(const Options& o);
bool isCollective(const std::string& test);

}  // namespace bench
