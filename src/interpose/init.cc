// MPI_Init*/MPI_Finalize: sets cgdr up over the real MPI and tears it down again.
#include <mpi.h>

#include <atomic>
#include <cstring>
#include <string>

#include "base/config.hpp"
#include "base/cuda.hpp"
#include "base/errors.hpp"
#include "base/log.hpp"
#include "base/errors.hpp"
#include "engine/handles.hpp"
#include "engine/progress.hpp"
#include "interpose/guard.hpp"
#include "interpose/lifecycle.hpp"
#include "mem/host_cache.hpp"
#include "engine/comm_table.hpp"
#include "engine/helper.hpp"
#include "engine/shm_engine.hpp"
#include "topo/detect.hpp"
#include "mem/pinned_pool.hpp"
#include "sched/select.hpp"

namespace cgdr::interpose {

thread_local bool tInside __attribute__((tls_model("initial-exec"))) = false;

namespace {
std::atomic<bool> gReady{false};
MPI_Comm gControl = MPI_COMM_NULL;  // cgdr's own traffic never uses the user's communicators

// The MPI this library was compiled against must be the one it runs on.
bool abiMatches() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  PMPI_Get_library_version(version, &len);
#if defined(OPEN_MPI) && OPEN_MPI
  const char* expected = "Open MPI";
#else
  const char* expected = "MPICH";
#endif
  if (std::strstr(version, expected)) return true;
  CGDR_LOG(kError, kInit, "libcgdr was built for %s but runs on: %.80s", expected, version);
  return false;
}

void setUp() {
  base::Registry::instance().resolveFromProcess();
  base::logConfigureFromSettings();
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  base::logSetRank(rank);
  if (!abiMatches()) PMPI_Abort(MPI_COMM_WORLD, 1);
  for (const auto& name : base::Registry::instance().unknownCgdrVariables())
    CGDR_LOG(kWarn, kInit, "%s is set but is not a cgdr setting (see cgdr-info)", name.c_str());
  for (const auto& name : base::Registry::instance().unknownTuningFileNames())
    CGDR_LOG(kWarn, kInit, "%s in the tuning file is not a cgdr setting; ignored (see cgdr-info)", name.c_str());
  base::initErrors();
  engine::handles::init();
  (void)base::cuda::usable();  // decide once, before the first message
  (void)mem::watchUcmEvents();  // a UCX-based MPI loads libucm during MPI_Init
  PMPI_Comm_dup(MPI_COMM_WORLD, &gControl);
  base::Status loc = topo::detect(gControl);
  if (!loc.isOk()) CGDR_LOG(kWarn, kInit, "locality detection failed: %s", loc.message().c_str());
  base::Status eng = engine::ShmEngine::start(gControl);
  if (!eng.isOk()) CGDR_LOG(kWarn, kInit, "no engine for co-located ranks (%s): all traffic through the real MPI",
                            eng.message().c_str());
  engine::comms::init();
  (void)sched::table();  // built now, not at the first message: CGDR_SCHED_INFO prints it at start-up
  runInitHooks();
  gReady.store(true, std::memory_order_release);
  CGDR_LOG(kInfo, kInit, "cgdr ready (GPU %s)", base::cuda::usable() ? "on" : "off");
}

void tearDown() {
  engine::beforeBlocking();
  runFinalizeHooks();
  if (gControl != MPI_COMM_NULL) PMPI_Barrier(gControl);  // peers may still be reading our chunks
  engine::stopHelper();
  engine::ShmEngine::stop();
  engine::comms::fini();
  engine::handles::fini();
  if (gControl != MPI_COMM_NULL) PMPI_Comm_free(&gControl);
  gReady.store(false, std::memory_order_release);
  mem::drainPinnedPool();
}

}  // namespace

bool ready() { return gReady.load(std::memory_order_acquire); }

}  // namespace cgdr::interpose

using namespace cgdr::interpose;

CGDR_API int MPI_Init(int* argc, char*** argv) {
  if (tInside) return PMPI_Init(argc, argv);
  Guard g;
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) setUp();
  return rc;
}

CGDR_API int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  if (tInside) return PMPI_Init_thread(argc, argv, required, provided);
  Guard g;
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) setUp();
  return rc;
}

CGDR_API int MPI_Finalize(void) {
  if (tInside || !ready()) return PMPI_Finalize();
  Guard g;
  tearDown();
  return PMPI_Finalize();
}

// Rebuilds the locality table (collective over MPI_COMM_WORLD), e.g. after a container migrated:
// C-GDR's re-detection entry point. Call it when no cgdr communication is in flight.
CGDR_API int MPIX_Cgdr_redetect(void) {
  if (tInside || !ready()) return MPI_ERR_OTHER;
  Guard g;
  cgdr::engine::beforeBlocking();
  PMPI_Barrier(gControl);
  cgdr::engine::stopHelper();
  cgdr::engine::ShmEngine::stop();
  cgdr::base::Status s = cgdr::topo::detect(gControl);
  if (s.isOk()) s = cgdr::engine::ShmEngine::start(gControl);
  cgdr::engine::comms::rebuild();
  return s.isOk() ? MPI_SUCCESS : cgdr::base::raise(MPI_COMM_WORLD, s);
}

// True only when a GPU is usable at run time (Open MPI's extension, answered by cgdr).
CGDR_API int MPIX_Query_cuda_support(void) { return cgdr::base::cuda::usable() ? 1 : 0; }
