// The arguments of one point-to-point operation, as the application passed them.
#pragma once
#include <mpi.h>

namespace cgdr::base {

enum class SendMode { kStandard, kSync, kReady, kBuffered };

struct SendArgs {
  const void* buf;
  int count;
  MPI_Datatype type;
  int peer;
  int tag;
  MPI_Comm comm;
  SendMode mode = SendMode::kStandard;
  bool blocking = false;  // MPI_Send / MPI_Ssend (the caller waits for it)
};

struct RecvArgs {
  void* buf;
  int count;
  MPI_Datatype type;
  int peer;  // may be MPI_ANY_SOURCE
  int tag;   // may be MPI_ANY_TAG
  MPI_Comm comm;
};

// PMPI_I*send for a mode.
inline int pmpiIsend(SendMode m, const void* buf, int count, MPI_Datatype t, int peer, int tag,
                     MPI_Comm c, MPI_Request* r) {
  switch (m) {
    case SendMode::kSync: return PMPI_Issend(buf, count, t, peer, tag, c, r);
    case SendMode::kReady: return PMPI_Irsend(buf, count, t, peer, tag, c, r);
    case SendMode::kBuffered: return PMPI_Ibsend(buf, count, t, peer, tag, c, r);
    case SendMode::kStandard: break;
  }
  return PMPI_Isend(buf, count, t, peer, tag, c, r);
}

// PMPI blocking send for a mode.
inline int pmpiSend(SendMode m, const void* buf, int count, MPI_Datatype t, int peer, int tag,
                    MPI_Comm c) {
  switch (m) {
    case SendMode::kSync: return PMPI_Ssend(buf, count, t, peer, tag, c);
    case SendMode::kReady: return PMPI_Rsend(buf, count, t, peer, tag, c);
    case SendMode::kBuffered: return PMPI_Bsend(buf, count, t, peer, tag, c);
    case SendMode::kStandard: break;
  }
  return PMPI_Send(buf, count, t, peer, tag, c);
}

// PMPI_*send_init for a mode.
inline int pmpiSendInit(SendMode m, const void* buf, int count, MPI_Datatype t, int peer, int tag,
                        MPI_Comm c, MPI_Request* r) {
  switch (m) {
    case SendMode::kSync: return PMPI_Ssend_init(buf, count, t, peer, tag, c, r);
    case SendMode::kReady: return PMPI_Rsend_init(buf, count, t, peer, tag, c, r);
    case SendMode::kBuffered: return PMPI_Bsend_init(buf, count, t, peer, tag, c, r);
    case SendMode::kStandard: break;
  }
  return PMPI_Send_init(buf, count, t, peer, tag, c, r);
}

}  // namespace cgdr::base
