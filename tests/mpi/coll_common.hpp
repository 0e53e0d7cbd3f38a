// Helpers for collective tests: each rank can compute every rank's input from seeds, so the
// expected result of any collective is computed locally, without trusting MPI.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "testlib.hpp"

namespace ct {

// Element i of rank r's input for test `tag` (values also fit float exactly).
inline std::int32_t val(int rank, int tag, std::size_t i) {
  return static_cast<std::int32_t>(t::pat(t::seedOf(rank, tag), i) % 61) - 30 + rank;
}
inline std::vector<std::int32_t> input(int rank, int tag, std::size_t n) {
  std::vector<std::int32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = val(rank, tag, i);
  return v;
}

// A typed view of a test buffer of some kind.
template <class T>
struct TBuf {
  t::Buf buf;
  std::size_t n;
  TBuf(t::Kind k, std::size_t count) : buf(k, count * sizeof(T)), n(count) {}
  T* ptr() const { return static_cast<T*>(buf.ptr()); }
  void set(const std::vector<T>& v) {
    std::vector<std::uint8_t> b(n * sizeof(T));
    if (!b.empty() && !v.empty()) std::memcpy(b.data(), v.data(), std::min(v.size(), n) * sizeof(T));
    buf.set(b);
  }
  std::vector<T> get() const {
    auto b = buf.get();
    std::vector<T> v(n);
    if (n != 0) std::memcpy(v.data(), b.data(), n * sizeof(T));
    return v;
  }
};

template <class T>
struct IsComplex : std::false_type {};
template <class T>
struct IsComplex<std::complex<T>> : std::true_type {};

// Compares got with want element by element: bytes for integers, values for floating types
// (the sign of a zero product depends on the order of a reduction).
template <class T>
bool same(const std::vector<T>& got, const std::vector<T>& want, const char* what, std::size_t n = SIZE_MAX) {
  n = std::min<std::size_t>({n, got.size(), want.size()});
  for (std::size_t i = 0; i < n; ++i) {
    bool equal;
    if constexpr (std::is_floating_point_v<T> || IsComplex<T>::value) equal = got[i] == want[i];
    else equal = std::memcmp(&got[i], &want[i], sizeof(T)) == 0;
    if (!equal) {
      t::fail(__FILE__, __LINE__, "%s: element %zu of %zu differs", what, i, n);
      return false;
    }
  }
  return true;
}

// Kind used by this rank for its send and receive buffers: even ranks (a, b), odd ranks (b, a),
// so every pair also mixes kinds across ranks.
inline std::pair<t::Kind, t::Kind> kindsFor(int rank, std::pair<t::Kind, t::Kind> p) {
  return rank % 2 == 0 ? p : std::make_pair(p.second, p.first);
}

inline std::vector<int> counts(int argc, char** argv) {
  std::size_t cap = std::strtoull(t::arg(argc, argv, "--max-count", "0").c_str(), nullptr, 0);
  std::vector<int> all = {0, 1, 3, 4095, (1 << 20) + 3};
  std::vector<int> out;
  for (int c : all)
    if (cap == 0 || static_cast<std::size_t>(c) <= cap) out.push_back(c);
  return out;
}

}  // namespace ct
