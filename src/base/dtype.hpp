// The bytes a (count, datatype) buffer covers, so a device buffer can be mirrored in host memory
// with the same layout and handed to the real MPI unchanged.
#pragma once
#include <mpi.h>

#include <cstddef>

namespace cgdr::base {

// Covered byte range of count elements of a datatype, relative to the buffer pointer.
struct Span {
  MPI_Aint lo = 0;              // first byte touched, relative to buf (may be negative)
  std::size_t bytes = 0;        // bytes from lo to one past the last byte touched
  std::size_t dataBytes = 0;    // bytes of payload (count * type size)
  bool contiguous = true;       // no holes: every covered byte is payload
};

// Computes the span with PMPI type queries (no allocation).
Span spanOf(long long count, MPI_Datatype type);

// Whether the real MPI accepted this datatype in a call on this thread since the type was last
// looked up (no MPI call tells whether a type is committed: cgdr asks the MPI once, then trusts
// this until MPI_Type_free or the cache drops the entry). MPI_DATATYPE_NULL never is.
bool typeAccepted(MPI_Datatype type);
void noteTypeAccepted(MPI_Datatype type);

// Frees a datatype (the user's, in MPI_Type_free, or one cgdr made) with the real MPI, then drops
// what this process cached about types: the freed handle may name another type later. Returns the
// MPI's result.
int freeDatatype(MPI_Datatype* type);

// Address of the first covered byte.
inline const void* spanStart(const void* buf, const Span& s) {
  return static_cast<const char*>(buf) + s.lo;
}

}  // namespace cgdr::base
