// Checks for the MPI tests that use cgdr's pieces directly (no testlib, no preload): a failed
// CHECK prints the place and the message and counts; the test reports the count at the end.
#pragma once
#include <cstdio>

namespace plain_check {
inline int failures = 0;
}  // namespace plain_check

#define CHECK(c, ...)                                            \
  do {                                                           \
    if (!(c)) {                                                  \
      std::fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      std::fprintf(stderr, __VA_ARGS__);                         \
      std::fprintf(stderr, "\n");                                \
      ++plain_check::failures;                                   \
    }                                                            \
  } while (0)
