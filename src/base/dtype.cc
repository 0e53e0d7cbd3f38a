#include "base/dtype.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <utility>

#include "base/ids.hpp"

namespace cgdr::base {
namespace {

// The type queries behind a span, cached per datatype handle for this thread: two ways per set,
// the one used last first, so two types in turn (a program's MPI_INT and MPI_DOUBLE) never push
// each other out. Handles are spread over the sets by mix64 (Open MPI's predefined types lie 512
// bytes apart: their low bits are all alike). A freed derived type's handle may come back for
// another type: freeDatatype bumps the generation.
struct TypeInfo {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::uint64_t generation = 0;
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  bool accepted = false;  // the real MPI took it in a call (committed, not MPI_DATATYPE_NULL)
};
constexpr int kSets = 32;
thread_local TypeInfo tCache[kSets][2] __attribute__((tls_model("initial-exec")));
std::atomic<std::uint64_t> gGeneration{1};

TypeInfo& infoOf(MPI_Datatype type) {
  std::uint64_t g = gGeneration.load(std::memory_order_acquire);
  // (A C cast: MPI_Datatype is a pointer in one MPI and an int in the other.)
  TypeInfo* set = tCache[mix64((std::uint64_t)(std::uintptr_t)type) % kSets];
  if (set[0].type == type && set[0].generation == g) return set[0];
  if (set[1].type == type && set[1].generation == g) {
    std::swap(set[0], set[1]);
    return set[0];
  }
  set[1] = set[0];
  TypeInfo& e = set[0];
  e.type = type;
  e.generation = g;
  e.accepted = false;
  PMPI_Type_size_x(type, &e.size);
  PMPI_Type_get_extent_x(type, &e.lb, &e.extent);
  PMPI_Type_get_true_extent_x(type, &e.tlb, &e.textent);
  return e;
}

}  // namespace

int freeDatatype(MPI_Datatype* type) {
  int rc = PMPI_Type_free(type);
  // After the free, not before: a lookup on another thread that read the old generation and
  // queried the type before it was freed must not stay valid for the handle's next type.
  gGeneration.fetch_add(1, std::memory_order_acq_rel);
  return rc;
}

bool typeAccepted(MPI_Datatype type) { return type != MPI_DATATYPE_NULL && infoOf(type).accepted; }

void noteTypeAccepted(MPI_Datatype type) {
  if (type != MPI_DATATYPE_NULL) infoOf(type).accepted = true;
}

Span spanOf(long long count, MPI_Datatype type) {
  Span s;
  if (count <= 0 || type == MPI_DATATYPE_NULL) return s;
  const TypeInfo& t = infoOf(type);
  MPI_Count last = static_cast<MPI_Count>(count - 1) * t.extent;
  MPI_Count lo = t.tlb + std::min<MPI_Count>(0, last);
  MPI_Count hi = t.tlb + t.textent + std::max<MPI_Count>(0, last);
  s.lo = static_cast<MPI_Aint>(lo);
  s.bytes = static_cast<std::size_t>(hi - lo);
  s.dataBytes = static_cast<std::size_t>(t.size * count);
  s.contiguous = s.dataBytes == s.bytes;
  return s;
}

}  // namespace cgdr::base
