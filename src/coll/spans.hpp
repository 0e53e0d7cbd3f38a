// Which bytes each buffer of a collective covers, from its counts, displacements and datatypes.
#pragma once
#include <mpi.h>

#include "base/dtype.hpp"

namespace cgdr::coll {

// Span of counts[i] elements of `type` placed at displs[i] elements, i < n (the v-variants).
base::Span spanV(int n, const int counts[], const int displs[], MPI_Datatype type);
// Span of counts[i] elements of types[i] placed at displs[i] bytes, i < n (the w-variants).
base::Span spanW(int n, const int counts[], const int displs[], const MPI_Datatype types[]);
// The same with MPI_Aint byte displacements (MPI_Neighbor_alltoallw).
base::Span spanW(int n, const int counts[], const MPI_Aint displs[], const MPI_Datatype types[]);
// Span of n * count elements: one block per rank, contiguous blocks as MPI lays them out.
base::Span spanBlocks(int n, int count, MPI_Datatype type);
// Sum of counts[0..n).
long long sum(int n, const int counts[]);

// How this rank takes part in a rooted collective.
enum class RootRole {
  kRoot,      // intracommunicator root, or MPI_ROOT on an intercommunicator
  kNonRoot,   // intracommunicator non-root, or a process of the non-root group
  kNone,      // MPI_PROC_NULL on an intercommunicator: no buffer is significant
};
RootRole rootRole(MPI_Comm comm, int root);
// Processes whose blocks a buffer holds: the remote group size on an intercommunicator.
int peerCount(MPI_Comm comm);

// What the buffers of a neighbourhood collective hold on this rank, from the communicator's
// topology: one block per in-neighbour in the receive buffer, one per out-neighbour in the send
// buffer (a Cartesian topology has two of each per dimension, MPI_PROC_NULL ones included).
struct Neighbors {
  bool topology = false;  // false: no topology (the real MPI refuses the call)
  int in = 0;
  int out = 0;
  bool inNull = false;  // some in-neighbour is MPI_PROC_NULL: its receive block is not written
};
Neighbors neighborsOf(MPI_Comm comm);

}  // namespace cgdr::coll
