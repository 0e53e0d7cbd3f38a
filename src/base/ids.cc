#include "base/ids.hpp"

#include <sys/random.h>
#include <unistd.h>

#include <atomic>
#include <ctime>

namespace cgdr::base {

std::uint64_t randomWord() {
  std::uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof v) && v != 0) return v;
  static std::atomic<std::uint64_t> calls{0};
  struct timespec ts {};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  v = mix64(static_cast<std::uint64_t>(getpid()) << 32 ^ static_cast<std::uint64_t>(ts.tv_sec) * 1000000000u ^
            static_cast<std::uint64_t>(ts.tv_nsec) ^ reinterpret_cast<std::uintptr_t>(&v) ^
            calls.fetch_add(1, std::memory_order_relaxed) * kGoldenGamma);
  return v != 0 ? v : 0x6364722d70726f62ull;
}

}  // namespace cgdr::base
