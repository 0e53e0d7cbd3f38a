// Memory-type classification of the buffers handed to MPI.
#pragma once
#include <cstddef>

#include "base/status.hpp"
#include "mem/memtype.hpp"

namespace cgdr::mem {

// Classifies [p, p+n): host, device or managed, and which GPU. Host pointers are answered from
// the host-range cache after their first query. A pointer that is neither host memory nor a live
// GPU allocation (a freed or foreign device pointer) is an error naming the address, and so is a
// GPU buffer whose n bytes run past its allocation's end or into an unmapped hole of its range.
base::Result<MemInfo> classify(const void* p, std::size_t n);

// True if the bytes [p, p+n) can be read by the CPU (checks the first and the last byte).
bool cpuReadable(const void* p, std::size_t n);

}  // namespace cgdr::mem
