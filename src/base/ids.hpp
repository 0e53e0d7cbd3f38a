// Identities out of numbers: a mixing function and random words for nonces and probes.
#pragma once
#include <cstdint>

namespace cgdr::base {

// splitmix64's finaliser: a bijection on 64-bit words that spreads every input bit over the
// whole word (mix64(0) is 0; callers that need non-zero words add a constant or test for it).
constexpr std::uint64_t mix64(std::uint64_t v) {
  v ^= v >> 30;
  v *= 0xbf58476d1ce4e5b9ull;
  v ^= v >> 27;
  v *= 0x94d049bb133111ebull;
  return v ^ (v >> 31);
}

// The golden-ratio increment of splitmix64, to step or offset the inputs of mix64.
inline constexpr std::uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// A non-zero 64-bit value for job nonces and probe words: from getrandom, or where that fails (a
// seccomp filter denying it, a kernel without it) mixed from the pid, the clock, an address and a
// call counter. Never blocks on the entropy pool and never loops on a failing call.
std::uint64_t randomWord();

}  // namespace cgdr::base
