#include "base/dtype.hpp"

#include <algorithm>

namespace cgdr::base {

Span spanOf(long long count, MPI_Datatype type) {
  Span s;
  if (count <= 0 || type == MPI_DATATYPE_NULL) return s;
  MPI_Count size = 0, lb = 0, extent = 0, tlb = 0, textent = 0;
  PMPI_Type_size_x(type, &size);
  PMPI_Type_get_extent_x(type, &lb, &extent);
  PMPI_Type_get_true_extent_x(type, &tlb, &textent);
  MPI_Count last = static_cast<MPI_Count>(count - 1) * extent;
  MPI_Count lo = tlb + std::min<MPI_Count>(0, last);
  MPI_Count hi = tlb + textent + std::max<MPI_Count>(0, last);
  s.lo = static_cast<MPI_Aint>(lo);
  s.bytes = static_cast<std::size_t>(hi - lo);
  s.dataBytes = static_cast<std::size_t>(size * count);
  s.contiguous = s.dataBytes == s.bytes;
  return s;
}

}  // namespace cgdr::base
