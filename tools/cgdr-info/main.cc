// cgdr-info: what cgdr sees and how it is configured. Alone or under mpirun (each rank reports).
//   cgdr-info [--settings] [--gpus] [--markdown]
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/log.hpp"
#include "mem/classify.hpp"

namespace {

void printSettings(bool markdown) {
  auto rows = cgdr::base::Registry::instance().rows();
  if (markdown) {
    std::puts("| Setting | Type | Default | Units | Aliases | Meaning |");
    std::puts("|---|---|---|---|---|---|");
    for (auto& r : rows)
      std::printf("| `%s` | %s | `%s` | %s | %s | %s |\n", r.name.c_str(), r.type.c_str(), r.defaultValue.c_str(),
                  r.units.c_str(), r.aliases.empty() ? "" : ("`" + r.aliases + "`").c_str(), r.help.c_str());
    return;
  }
  std::puts("# settings: NAME = value (default; source) [aliases] - help");
  for (auto& r : rows) {
    std::printf("%-28s = %-12s (default %s; %s)%s%s%s\n    %s\n", r.name.c_str(), r.value.c_str(),
                r.defaultValue.empty() ? "\"\"" : r.defaultValue.c_str(), r.source.c_str(),
                r.aliases.empty() ? "" : " [", r.aliases.c_str(), r.aliases.empty() ? "" : "]", r.help.c_str());
  }
}

void printGpus(int rank) {
  namespace cuda = cgdr::base::cuda;
  if (!cuda::usable()) {
    std::printf("rank %d: GPU support off: %s\n", rank, cuda::whyUnusable().c_str());
    return;
  }
  std::printf("rank %d: %d GPU(s)\n", rank, cuda::deviceCount());
  for (int d = 0; d < cuda::deviceCount(); ++d)
    std::printf("rank %d:   GPU %d: %s\n", rank, d, cuda::describeDevice(d).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  cgdr::base::Registry::instance().resolveFromProcess();
  cgdr::base::logConfigureFromSettings();
  bool settings = false, gpus = false, markdown = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--settings")) settings = true;
    else if (!std::strcmp(argv[i], "--gpus")) gpus = true;
    else if (!std::strcmp(argv[i], "--markdown")) settings = markdown = true;
    else {
      if (rank == 0) std::fprintf(stderr, "usage: cgdr-info [--settings] [--gpus] [--markdown]\n");
      MPI_Finalize();
      return 2;
    }
  }
  if (!settings && !gpus) settings = gpus = true;
  if (gpus) printGpus(rank);
  if (settings && rank == 0) printSettings(markdown);
  MPI_Finalize();
  return 0;
}
