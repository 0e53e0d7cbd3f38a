// Locality detection (C-GDR's module): every rank writes its identity record into a per-job
// shared-memory list at slot = rank, the job agrees on a random nonce through the real MPI, one
// collective step later each rank reads the filled slots (those ranks share memory with it), and
// every peer is classified. detect() can run again (MPIX_Cgdr_redetect) after a migration.
#pragma once
#include <mpi.h>

#include <cstddef>
#include <vector>

#include "base/status.hpp"
#include "topo/peer.hpp"

namespace cgdr::topo {

struct LocalityTable {
  LocalityMode mode = LocalityMode::kContainer;
  int rank = 0;
  int size = 1;
  IdentityRecord me{};
  std::vector<PeerInfo> peers;               // indexed by MPI_COMM_WORLD rank
  std::vector<IdentityRecord> records;       // the co-located peers' records (others zeroed)
  std::size_t shmBytes = 0;                  // size of the host's locality segment
  double seconds = 0;                        // time the detection took on this rank
  std::string shmProblem;                    // why no segment could be used ("" if it was)
  int generation = 0;                        // incremented by every detection
};

// Collective over `world` (a private duplicate of MPI_COMM_WORLD).
base::Status detect(MPI_Comm world);
// The table in force (empty until detect() ran).
const LocalityTable& locality();
// The locality mode setting (CGDR_LOCALITY).
LocalityMode configuredMode();

}  // namespace cgdr::topo
