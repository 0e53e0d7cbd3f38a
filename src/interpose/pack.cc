// MPI_Pack/Unpack and their external32 forms on GPU buffers: the data buffer and the touched
// region of the packed buffer are staged; only the bytes the real MPI packs are copied back.
// A null position, a negative count, MPI_DATATYPE_NULL or MPI_COMM_NULL goes to the real MPI as
// it is, which reports it once through the handler.
#include <mpi.h>

#include "base/dtype.hpp"
#include "interpose/coll_support.hpp"

using namespace cgdr;
using coll::recvPtr;
using coll::sendPtr;

namespace {

// Open MPI 4.1's MPI_Pack_external_size does not check that the datatype was committed and, given
// one that never was, does not return (MPI_Pack_external and MPI_Unpack_external refuse it). So a
// type this thread has not seen accepted is first put to the real MPI in the caller's own call with
// nothing to pack or unpack: refused there once, through MPI_COMM_WORLD's handler, as the MPI
// refuses the caller's call.
int externalTypeVerdict(const char rep[], MPI_Datatype t, bool unpack) {
  if (base::typeAccepted(t)) return MPI_SUCCESS;
  char none = 0;
  MPI_Aint at = 0;
  int rc = unpack ? PMPI_Unpack_external(rep, &none, 0, &at, &none, 0, t)
                  : PMPI_Pack_external(rep, &none, 0, t, &none, 0, &at);
  if (rc == MPI_SUCCESS) base::noteTypeAccepted(t);
  return rc;
}

}  // namespace

CGDR_API int MPI_Pack(const void* in, int n, MPI_Datatype t, void* out, int outsize, int* pos, MPI_Comm c) {
  CGDR_COLL_ENTER(c, PMPI_Pack(in, n, t, out, outsize, pos, c));
  // What the real MPI refuses goes to it as it is, to be reported once.
  if (!pos || n < 0 || t == MPI_DATATYPE_NULL) return PMPI_Pack(in, n, t, out, outsize, pos, c);
  int bytes = 0;
  int rc = PMPI_Pack_size(n, t, c, &bytes);
  if (rc != MPI_SUCCESS) return rc;  // reported (MPICH refuses an uncommitted type here)
  coll::Staging st;
  auto sl = coll::planPack(st, in, n, t, out, outsize, *pos, bytes);
  return coll::runBlocking(c, st, [&] { return PMPI_Pack(sendPtr(st, sl, in), n, t, recvPtr(st, sl, out), outsize, pos, c); });
}

CGDR_API int MPI_Unpack(const void* in, int insize, int* pos, void* out, int n, MPI_Datatype t, MPI_Comm c) {
  CGDR_COLL_ENTER(c, PMPI_Unpack(in, insize, pos, out, n, t, c));
  // What the real MPI refuses goes to it as it is, to be reported once.
  if (!pos || n < 0 || t == MPI_DATATYPE_NULL) return PMPI_Unpack(in, insize, pos, out, n, t, c);
  int bytes = 0;
  int rc = PMPI_Pack_size(n, t, c, &bytes);
  if (rc != MPI_SUCCESS) return rc;  // reported (MPICH refuses an uncommitted type here)
  coll::Staging st;
  auto sl = coll::planUnpack(st, in, insize, *pos, bytes, out, n, t);
  return coll::runBlocking(c, st, [&] { return PMPI_Unpack(sendPtr(st, sl, in), insize, pos, recvPtr(st, sl, out), n, t, c); });
}

CGDR_API int MPI_Pack_external(const char rep[], const void* in, int n, MPI_Datatype t, void* out,
                               MPI_Aint outsize, MPI_Aint* pos) {
  CGDR_LOCAL_ENTER(PMPI_Pack_external(rep, in, n, t, out, outsize, pos));
  if (!pos || n < 0 || t == MPI_DATATYPE_NULL) return PMPI_Pack_external(rep, in, n, t, out, outsize, pos);
  if (int rc = externalTypeVerdict(rep, t, false); rc != MPI_SUCCESS) return rc;  // reported
  MPI_Aint bytes = 0;
  int rc = PMPI_Pack_external_size(rep, n, t, &bytes);
  if (rc != MPI_SUCCESS) return rc;  // reported
  coll::Staging st;
  auto sl = coll::planPack(st, in, n, t, out, outsize, *pos, bytes);
  return coll::runBlocking(MPI_COMM_WORLD, st, [&] {
    return PMPI_Pack_external(rep, sendPtr(st, sl, in), n, t, recvPtr(st, sl, out), outsize, pos);
  });
}

CGDR_API int MPI_Unpack_external(const char rep[], const void* in, MPI_Aint insize, MPI_Aint* pos, void* out,
                                 int n, MPI_Datatype t) {
  CGDR_LOCAL_ENTER(PMPI_Unpack_external(rep, in, insize, pos, out, n, t));
  if (!pos || n < 0 || t == MPI_DATATYPE_NULL) return PMPI_Unpack_external(rep, in, insize, pos, out, n, t);
  if (int rc = externalTypeVerdict(rep, t, true); rc != MPI_SUCCESS) return rc;  // reported
  MPI_Aint bytes = 0;
  int rc = PMPI_Pack_external_size(rep, n, t, &bytes);
  if (rc != MPI_SUCCESS) return rc;  // reported
  coll::Staging st;
  auto sl = coll::planUnpack(st, in, insize, *pos, bytes, out, n, t);
  return coll::runBlocking(MPI_COMM_WORLD, st, [&] {
    return PMPI_Unpack_external(rep, sendPtr(st, sl, in), insize, pos, recvPtr(st, sl, out), n, t);
  });
}
