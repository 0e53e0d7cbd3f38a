// For each collective (and the pack calls), which of its buffers are significant on this rank,
// what bytes they cover, and whether the real MPI reads them, writes them, or both (MPI_IN_PLACE,
// roots, intercommunicator groups). Each plan fills a Staging and returns the slots to use.
#pragma once
#include <mpi.h>

#include "coll/staging.hpp"

namespace cgdr::coll {

// Slots of the send and receive buffers (-1: pass the user's pointer unchanged).
struct Slots {
  int send = -1;
  int recv = -1;
};

// The pointers to hand to the real MPI for a plan.
inline const void* sendPtr(const Staging& st, const Slots& s, const void* user) {
  return s.send >= 0 ? st.ptr(s.send) : user;
}
inline void* recvPtr(const Staging& st, const Slots& s, void* user) {
  return s.recv >= 0 ? st.ptr(s.recv) : user;
}

Slots planBcast(Staging& st, void* buf, int count, MPI_Datatype t, int root, MPI_Comm c);
Slots planGather(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, int rc, MPI_Datatype rt,
                 int root, MPI_Comm c);
Slots planGatherv(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, const int rcs[],
                  const int displs[], MPI_Datatype rt, int root, MPI_Comm c);
Slots planScatter(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, int rc, MPI_Datatype rt,
                  int root, MPI_Comm c);
Slots planScatterv(Staging& st, const void* s, const int scs[], const int displs[], MPI_Datatype st_, void* r,
                   int rc, MPI_Datatype rt, int root, MPI_Comm c);
Slots planAllgather(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, int rc, MPI_Datatype rt,
                    MPI_Comm c);
Slots planAllgatherv(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, const int rcs[],
                     const int displs[], MPI_Datatype rt, MPI_Comm c);
Slots planAlltoall(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, int rc, MPI_Datatype rt,
                   MPI_Comm c);
Slots planAlltoallv(Staging& st, const void* s, const int scs[], const int sds[], MPI_Datatype st_, void* r,
                    const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c);
Slots planAlltoallw(Staging& st, const void* s, const int scs[], const int sds[], const MPI_Datatype sts[],
                    void* r, const int rcs[], const int rds[], const MPI_Datatype rts[], MPI_Comm c);
// Neighbourhood collectives: blocks per in- and out-neighbour of the communicator's topology
// (none staged without one: the real MPI refuses the call). A receive block of an MPI_PROC_NULL
// neighbour keeps its bytes.
Slots planNeighborAllgather(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, int rc,
                            MPI_Datatype rt, MPI_Comm c);
Slots planNeighborAllgatherv(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, const int rcs[],
                             const int displs[], MPI_Datatype rt, MPI_Comm c);
Slots planNeighborAlltoall(Staging& st, const void* s, int sc, MPI_Datatype st_, void* r, int rc,
                           MPI_Datatype rt, MPI_Comm c);
Slots planNeighborAlltoallv(Staging& st, const void* s, const int scs[], const int sds[], MPI_Datatype st_,
                            void* r, const int rcs[], const int rds[], MPI_Datatype rt, MPI_Comm c);
Slots planNeighborAlltoallw(Staging& st, const void* s, const int scs[], const MPI_Aint sds[],
                            const MPI_Datatype sts[], void* r, const int rcs[], const MPI_Aint rds[],
                            const MPI_Datatype rts[], MPI_Comm c);
Slots planReduce(Staging& st, const void* s, void* r, int count, MPI_Datatype t, int root, MPI_Comm c);
Slots planAllreduce(Staging& st, const void* s, void* r, int count, MPI_Datatype t, MPI_Comm c);
Slots planReduceScatter(Staging& st, const void* s, void* r, const int rcs[], MPI_Datatype t, MPI_Comm c);
Slots planReduceScatterBlock(Staging& st, const void* s, void* r, int rc, MPI_Datatype t, MPI_Comm c);
Slots planScan(Staging& st, const void* s, void* r, int count, MPI_Datatype t, MPI_Comm c, bool exclusive);
Slots planReduceLocal(Staging& st, const void* in, void* inout, int count, MPI_Datatype t);
// Pack: `send` = the data buffer, `recv` = the packed buffer region from *position on.
Slots planPack(Staging& st, const void* in, int count, MPI_Datatype t, void* out, MPI_Aint outsize,
               MPI_Aint position, MPI_Aint packBytes);
// Unpack: `send` = the packed region from position on, `recv` = the data buffer.
Slots planUnpack(Staging& st, const void* in, MPI_Aint insize, MPI_Aint position, MPI_Aint packBytes, void* out,
                 int count, MPI_Datatype t);

}  // namespace cgdr::coll
