// Every predefined reduction operation on every type it applies to (Allreduce, Reduce, Scan),
// MAXLOC/MINLOC pair types (whose extent has holes), complex numbers, and a non-commutative
// user-defined operation (2x2 matrix product) that checks the rank order of the reduction.
// Float values are small integers, so any reduction order gives the exact same bits.
#include <algorithm>
#include <complex>
#include <functional>
#include <string>

#include "coll_common.hpp"

namespace {

int me, np, tagNo = 0;

template <class T>
T valueOf(int rank, int tag, std::size_t i, MPI_Op op) {
  long v = ct::val(rank, tag, i);
  if (op == MPI_PROD) v = (v % 3) + 1 + (rank % 2);  // keep products small and exact
  if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) v = (v % 2 != 0);
  if constexpr (std::is_unsigned_v<T>) v = v < 0 ? -v : v;
  return static_cast<T>(v);
}

template <class T>
T combine(MPI_Op op, T a, T b) {
  if (op == MPI_SUM) return a + b;
  if (op == MPI_PROD) return a * b;
  if (op == MPI_MAX) return std::max(a, b);
  if (op == MPI_MIN) return std::min(a, b);
  if (op == MPI_LAND) return (a != 0) && (b != 0);
  if (op == MPI_LOR) return (a != 0) || (b != 0);
  if (op == MPI_LXOR) return (a != 0) != (b != 0);
  if constexpr (std::is_integral_v<T>) {
    if (op == MPI_BAND) return a & b;
    if (op == MPI_BOR) return a | b;
    if (op == MPI_BXOR) return a ^ b;
  }
  return a;
}

template <class T>
void testOp(t::Kind sk, t::Kind rk, MPI_Datatype type, MPI_Op op, const char* name, int n) {
  int tag = ++tagNo;
  std::vector<T> mine(n), total(n), prefix(n);
  for (int q = 0; q < np; ++q)
    for (int i = 0; i < n; ++i) {
      T v = valueOf<T>(q, tag, i, op);
      total[i] = q == 0 ? v : combine(op, total[i], v);
      if (q <= me) prefix[i] = q == 0 ? v : combine(op, prefix[i], v);
      if (q == me) mine[i] = v;
    }
  ct::TBuf<T> s(sk, n), r(rk, n);
  s.set(mine);
  T_MPI(MPI_Allreduce(s.ptr(), r.ptr(), n, type, op, MPI_COMM_WORLD));
  ct::same(r.get(), total, (std::string("Allreduce ") + name).c_str());
  r.set(std::vector<T>(n, T{}));
  T_MPI(MPI_Reduce(s.ptr(), r.ptr(), n, type, op, 0, MPI_COMM_WORLD));
  if (me == 0) ct::same(r.get(), total, (std::string("Reduce ") + name).c_str());
  T_MPI(MPI_Scan(s.ptr(), r.ptr(), n, type, op, MPI_COMM_WORLD));
  ct::same(r.get(), prefix, (std::string("Scan ") + name).c_str());
}

template <class T>
void arithmetic(t::Kind sk, t::Kind rk, MPI_Datatype type, const char* tname, int n, bool bitwise) {
  const std::pair<MPI_Op, const char*> ops[] = {{MPI_SUM, "SUM"}, {MPI_PROD, "PROD"}, {MPI_MAX, "MAX"},
                                                {MPI_MIN, "MIN"}, {MPI_LAND, "LAND"}, {MPI_LOR, "LOR"},
                                                {MPI_LXOR, "LXOR"}, {MPI_BAND, "BAND"}, {MPI_BOR, "BOR"},
                                                {MPI_BXOR, "BXOR"}};
  for (auto [op, oname] : ops) {
    bool isBit = op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR;
    bool isLogical = op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR;
    if (isBit && !bitwise) continue;
    if (isLogical && !std::is_integral_v<T>) continue;
    testOp<T>(sk, rk, type, op, (std::string(oname) + "/" + tname).c_str(), n);
  }
}

template <class V>
struct Pair {
  V v;
  int i;
};

template <class V>
void locOps(t::Kind sk, t::Kind rk, MPI_Datatype type, const char* tname, int n) {
  for (MPI_Op op : {MPI_MAXLOC, MPI_MINLOC}) {
    int tag = ++tagNo;
    std::vector<Pair<V>> mine(n), want(n);
    for (int q = 0; q < np; ++q)
      for (int i = 0; i < n; ++i) {
        Pair<V> p{static_cast<V>(ct::val(q, tag, i) % 5), q};
        if (q == me) mine[i] = p;
        bool better = op == MPI_MAXLOC ? p.v > want[i].v : p.v < want[i].v;
        if (q == 0 || better) want[i] = p;  // ties keep the lowest index
      }
    ct::TBuf<Pair<V>> s(sk, n), r(rk, n);
    s.set(mine);
    r.set(std::vector<Pair<V>>(n, Pair<V>{}));
    T_MPI(MPI_Allreduce(s.ptr(), r.ptr(), n, type, op, MPI_COMM_WORLD));
    auto got = r.get();
    for (int i = 0; i < n; ++i) {
      if (got[i].v != want[i].v || got[i].i != want[i].i) {
        T_CHECK(false, "%s %s: element %d is (%g,%d), expected (%g,%d)", op == MPI_MAXLOC ? "MAXLOC" : "MINLOC", tname, i,
                static_cast<double>(got[i].v), got[i].i, static_cast<double>(want[i].v), want[i].i);
        break;
      }
    }
  }
}

void complexOps(t::Kind sk, t::Kind rk, int n) {
  using C = std::complex<double>;
  for (MPI_Op op : {MPI_SUM, MPI_PROD}) {
    int tag = ++tagNo;
    std::vector<C> mine(n), want(n);
    for (int q = 0; q < np; ++q)
      for (int i = 0; i < n; ++i) {
        C c(ct::val(q, tag, i) % 3, ct::val(q, tag, i + 7) % 2);
        if (q == me) mine[i] = c;
        want[i] = q == 0 ? c : (op == MPI_SUM ? want[i] + c : want[i] * c);
      }
    ct::TBuf<C> s(sk, n), r(rk, n);
    s.set(mine);
    T_MPI(MPI_Allreduce(s.ptr(), r.ptr(), n, MPI_C_DOUBLE_COMPLEX, op, MPI_COMM_WORLD));
    ct::same(r.get(), want, op == MPI_SUM ? "complex SUM" : "complex PROD");
  }
}

// inout = in * inout for 2x2 unsigned matrices (mod 2^32): associative, not commutative.
void matmul(void* in, void* inout, int* len, MPI_Datatype*) {
  auto* a = static_cast<unsigned*>(in);
  auto* b = static_cast<unsigned*>(inout);
  for (int k = 0; k < *len; ++k, a += 4, b += 4) {
    unsigned r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                     a[2] * b[1] + a[3] * b[3]};
    std::copy(r, r + 4, b);
  }
}

void userOp(t::Kind sk, t::Kind rk, int n) {
  MPI_Datatype mat;
  MPI_Type_contiguous(4, MPI_UNSIGNED, &mat);
  MPI_Type_commit(&mat);
  MPI_Op op;
  MPI_Op_create(matmul, 0, &op);
  int tag = ++tagNo;
  auto matOf = [&](int q, int i) {
    std::vector<unsigned> m(4);
    for (int k = 0; k < 4; ++k) m[k] = static_cast<unsigned>(t::pat(t::seedOf(q, tag), 4 * i + k));
    return m;
  };
  std::vector<unsigned> mine(4 * n), want(4 * n);
  for (int i = 0; i < n; ++i) {
    auto m = matOf(me, i);
    std::copy(m.begin(), m.end(), mine.begin() + 4 * i);
    std::vector<unsigned> acc = matOf(np - 1, i);
    for (int q = np - 2; q >= 0; --q) {  // M0 * M1 * ... * M(n-1)
      auto a = matOf(q, i);
      int len = 1;
      matmul(a.data(), acc.data(), &len, nullptr);
    }
    std::copy(acc.begin(), acc.end(), want.begin() + 4 * i);
  }
  ct::TBuf<unsigned> s(sk, 4 * n), r(rk, 4 * n);
  s.set(mine);
  T_MPI(MPI_Allreduce(s.ptr(), r.ptr(), n, mat, op, MPI_COMM_WORLD));
  ct::same(r.get(), want, "user-defined non-commutative op");
  MPI_Op_free(&op);
  MPI_Type_free(&mat);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "coll_ops");
  me = t::rank();
  np = t::size();
  for (auto pair : pairs) {
    auto [sk, rk] = ct::kindsFor(me, pair);
    for (int n : {1, 17, 4099}) {
      arithmetic<std::int32_t>(sk, rk, MPI_INT, "INT", n, true);
      arithmetic<unsigned>(sk, rk, MPI_UNSIGNED, "UNSIGNED", n, true);
      arithmetic<short>(sk, rk, MPI_SHORT, "SHORT", n, true);
      arithmetic<long long>(sk, rk, MPI_LONG_LONG, "LONG_LONG", n, true);
      arithmetic<std::uint8_t>(sk, rk, MPI_UINT8_T, "UINT8_T", n, true);
      arithmetic<std::int64_t>(sk, rk, MPI_INT64_T, "INT64_T", n, true);
      arithmetic<signed char>(sk, rk, MPI_SIGNED_CHAR, "SIGNED_CHAR", n, true);
      arithmetic<float>(sk, rk, MPI_FLOAT, "FLOAT", n, false);
      arithmetic<double>(sk, rk, MPI_DOUBLE, "DOUBLE", n, false);
      locOps<int>(sk, rk, MPI_2INT, "2INT", n);
      locOps<double>(sk, rk, MPI_DOUBLE_INT, "DOUBLE_INT", n);
      locOps<float>(sk, rk, MPI_FLOAT_INT, "FLOAT_INT", n);
      locOps<short>(sk, rk, MPI_SHORT_INT, "SHORT_INT", n);
      complexOps(sk, rk, n);
      userOp(sk, rk, n);
    }
  }
  return t::finish("coll_ops");
}
