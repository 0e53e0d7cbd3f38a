#include "base/dtype.hpp"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>

namespace cgdr::base {
namespace {

// The type queries behind a span, cached per datatype handle for this thread. A freed derived
// type's handle may come back for another type: MPI_Type_free bumps the generation.
struct TypeInfo {
  MPI_Datatype type = MPI_DATATYPE_NULL;
  std::uint64_t generation = 0;
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
};
constexpr int kSlots = 32;
thread_local TypeInfo tCache[kSlots] __attribute__((tls_model("initial-exec")));
std::atomic<std::uint64_t> gGeneration{1};

const TypeInfo& infoOf(MPI_Datatype type) {
  std::uint64_t g = gGeneration.load(std::memory_order_acquire);
  TypeInfo& e = tCache[std::hash<MPI_Datatype>()(type) % kSlots];
  if (e.type == type && e.generation == g) return e;
  e.type = type;
  e.generation = g;
  PMPI_Type_size_x(type, &e.size);
  PMPI_Type_get_extent_x(type, &e.lb, &e.extent);
  PMPI_Type_get_true_extent_x(type, &e.tlb, &e.textent);
  return e;
}

}  // namespace

void forgetDatatypes() { gGeneration.fetch_add(1, std::memory_order_acq_rel); }

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
