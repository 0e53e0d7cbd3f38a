// cgdr-info: what cgdr sees and how it is configured. Alone or under mpirun.
//   cgdr-info [--identity] [--locality] [--gpus] [--settings] [--markdown]
// With no option it prints everything; rank 0 prints the job's output in rank order.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "base/config.hpp"
#include "channel/gdrcopy/gdrcopy.hpp"
#include "mem/vmm_heap.hpp"
#include "base/cuda.hpp"
#include "base/log.hpp"
#include "topo/detect.hpp"
#include "topo/report.hpp"

namespace {

std::string settingsText(bool markdown) {
  auto rows = cgdr::base::Registry::instance().rows();
  std::string out;
  char line[2048];
  if (markdown) {
    out += "| Setting | Type | Default | Units | Takes | Aliases | Meaning |\n|---|---|---|---|---|---|---|\n";
    for (auto& r : rows) {
      std::snprintf(line, sizeof line, "| `%s` | %s | `%s` | %s | %s | %s | %s |\n", r.name.c_str(), r.type.c_str(),
                    r.defaultValue.c_str(), r.units.c_str(), r.range.c_str(),
                    r.aliases.empty() ? "" : ("`" + r.aliases + "`").c_str(), r.help.c_str());
      out += line;
    }
    return out;
  }
  out += "# settings: NAME = value (default; source) [aliases] {the values it takes}\n";
  for (auto& r : rows) {
    std::snprintf(line, sizeof line, "%-26s = %-12s (default %s; %s)%s%s%s%s%s%s\n    %s\n", r.name.c_str(),
                  r.value.c_str(), r.defaultValue.empty() ? "\"\"" : r.defaultValue.c_str(), r.source.c_str(),
                  r.aliases.empty() ? "" : " [", r.aliases.c_str(), r.aliases.empty() ? "" : "]",
                  r.range.empty() ? "" : " {", r.range.c_str(), r.range.empty() ? "" : "}", r.help.c_str());
    out += line;
  }
  return out;
}

std::string gpuText(int rank) {
  namespace cuda = cgdr::base::cuda;
  std::string p = "rank " + std::to_string(rank) + ": ";
  if (!cuda::usable()) return p + "GPU support off: " + cuda::whyUnusable() + "\n";
  std::string out = p + std::to_string(cuda::deviceCount()) + " GPU(s)\n";
  for (int d = 0; d < cuda::deviceCount(); ++d) {
    out += p + "  GPU " + std::to_string(d) + ": " + cuda::describeDevice(d) + "\n";
    out += p + "    cuMem fd sharing (cuda-vmm channels): " + (cuda::vmmFdSupported(d) ? "yes" : "no") + "\n";
  }
  out += p + "cudaMalloc (shared CUDA runtime): " + cgdr::mem::exportableMallocState() + "\n";
  out += p + "cudaMallocAsync (shared CUDA runtime): " + cgdr::mem::exportableAsyncState() + "\n";
  namespace gdr = cgdr::channel::gdrcopy;
  out += p + "gdrcopy: " +
         (gdr::available() ? std::string("library and driver present, but cgdr's gdrcopy copy path is not implemented: not used")
                           : "not used: " + gdr::whyNot()) +
         "\n";
  return out;
}

// Prints every rank's text in rank order on rank 0.
void printOrdered(const std::string& mine, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size), displs(size);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, comm);
  int total = 0;
  for (int i = 0; i < size; ++i) {
    displs[i] = total;
    total += lens[i];
  }
  std::vector<char> all(rank == 0 ? total + 1 : 1);
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, comm);
  if (rank == 0) std::fwrite(all.data(), 1, total, stdout);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cgdr::base::Registry::instance().resolveFromProcess();
  cgdr::base::logConfigureFromSettings();
  bool identity = false, loc = false, gpus = false, settings = false, markdown = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--identity")) identity = true;
    else if (!std::strcmp(argv[i], "--locality")) loc = true;
    else if (!std::strcmp(argv[i], "--gpus")) gpus = true;
    else if (!std::strcmp(argv[i], "--settings")) settings = true;
    else if (!std::strcmp(argv[i], "--markdown")) settings = markdown = true;
    else {
      if (rank == 0) std::fprintf(stderr, "usage: cgdr-info [--identity] [--locality] [--gpus] [--settings] [--markdown]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (!identity && !loc && !gpus && !settings) identity = loc = gpus = settings = true;
  MPI_Comm world;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  if (identity || loc) {
    (void)cgdr::topo::detect(world);
  }
  const auto& t = cgdr::topo::locality();
  if (gpus) printOrdered(gpuText(rank), world);
  if (identity) printOrdered(cgdr::topo::describeIdentity(t.me), world);
  if (loc) {
    if (rank == 0) {
      std::printf("# locality mode %s: %d ranks; locality segment %zu bytes per host; detection %.3f ms on rank 0%s%s\n",
                  cgdr::topo::modeName(t.mode), t.size, t.shmBytes, t.seconds * 1e3,
                  t.shmProblem.empty() ? "" : "; no segment: ", t.shmProblem.c_str());
      std::printf("# relation matrix: s self, n same namespace, c co-located container, r remote;"
                  " upper case = served by cgdr's engine\n");
    }
    printOrdered("matrix " + std::to_string(rank) + ":" + cgdr::topo::relationRow(t) + "\n", world);
    printOrdered(cgdr::topo::describePeers(t), world);
  }
  if (settings && rank == 0) std::fputs(settingsText(markdown).c_str(), stdout);
  MPI_Comm_free(&world);
  MPI_Finalize();
  return 0;
}
