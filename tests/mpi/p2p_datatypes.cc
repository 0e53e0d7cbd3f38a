// Derived datatypes on every buffer kind: contiguous, vector (holes must keep the receiver's
// bytes), indexed, resized with a negative lower bound; MPI_Sendrecv and MPI_Sendrecv_replace in
// a ring; MPI_Get_count / MPI_Get_elements on partially filled receives; with --big, more than
// 2 GiB of data in a datatype with holes, and through cgdr one element of more than 2 GiB refused.
#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "testlib.hpp"

namespace {

struct Layout {
  const char* name;
  MPI_Datatype type;
  int count;
  MPI_Aint offset;  // where element 0 starts inside the test buffer (negative lb types)
};

std::vector<Layout> layouts() {
  std::vector<Layout> out;
  MPI_Datatype c, v, ix, r, base;
  MPI_Type_contiguous(1000, MPI_INT, &c);
  MPI_Type_commit(&c);
  out.push_back({"contiguous", c, 3, 0});
  MPI_Type_vector(257, 3, 7, MPI_DOUBLE, &v);  // holes between blocks
  MPI_Type_commit(&v);
  out.push_back({"vector", v, 2, 0});
  int lens[] = {5, 1, 17, 3};
  int disps[] = {0, 9, 12, 40};
  MPI_Type_indexed(4, lens, disps, MPI_SHORT, &ix);
  MPI_Type_commit(&ix);
  out.push_back({"indexed", ix, 31, 0});
  MPI_Type_vector(3, 2, 4, MPI_INT, &base);
  MPI_Type_create_resized(base, -16, 64, &r);  // negative lower bound
  MPI_Type_commit(&r);
  MPI_Type_free(&base);
  out.push_back({"resized", r, 11, 16});
  return out;
}

std::size_t spanBytes(MPI_Datatype t, int count) {
  MPI_Aint lb, ext, tlb, text;
  MPI_Type_get_extent(t, &lb, &ext);
  MPI_Type_get_true_extent(t, &tlb, &text);
  return static_cast<std::size_t>((count - 1) * ext + text + tlb) + 64;
}

// Expected receive buffer: `holes` (or poison), with the type's bytes from the sender's pattern.
std::vector<std::uint8_t> expected(const Layout& l, std::size_t bytes, std::uint32_t seed,
                                   const std::vector<std::uint8_t>* holes = nullptr) {
  std::vector<std::uint8_t> src(bytes), dst = holes ? *holes : std::vector<std::uint8_t>(bytes, 0xA5);
  for (std::size_t i = 0; i < bytes; ++i) src[i] = t::pat(seed, i);
  int size = 0;
  MPI_Pack_size(l.count, l.type, MPI_COMM_WORLD, &size);
  std::vector<char> packed(size);
  int pos = 0;
  MPI_Pack(src.data() + l.offset, l.count, l.type, packed.data(), size, &pos, MPI_COMM_WORLD);
  pos = 0;
  MPI_Unpack(packed.data(), size, &pos, dst.data() + l.offset, l.count, l.type, MPI_COMM_WORLD);
  return dst;
}

void compare(const t::Buf& b, const std::vector<std::uint8_t>& want, const char* what) {
  auto v = b.get();
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (v[i] != want[i]) {
      T_CHECK(false, "%s: byte %zu is 0x%02x, expected 0x%02x", what, i, v[i], want[i]);
      return;
    }
  }
}

// --big: messages of more than 2 GiB of data in a datatype with holes, from a buffer of kind sk
// into one of kind rk: K elements of B bytes, each followed by a hole of H bytes, received from a
// contiguous type of B bytes (the receiver unpacks; into GPU memory through a host mirror of the
// span) and sent into that contiguous type (the sender packs). Every byte is checked, holes too
// (the receiver's poison).
void big(int me, int* msg, t::Kind sk, t::Kind rk) {
  constexpr std::size_t B = 1 << 20, H = 4096, E = B + H, K = 2049;  // 2049 MiB of data
  MPI_Datatype block, holes;
  MPI_Type_contiguous(static_cast<int>(B), MPI_BYTE, &block);
  MPI_Type_commit(&block);
  MPI_Type_create_resized(block, 0, static_cast<MPI_Aint>(E), &holes);
  MPI_Type_commit(&holes);
  // Data offset of packed byte p in a buffer of the holed type.
  auto at = [&](std::size_t p) { return (p / B) * E + p % B; };
  struct Case {
    const char* name;
    MPI_Datatype send, recv;
  } cases[] = {{"contiguous into holes", block, holes}, {"holes into contiguous", holes, block}};
  for (const Case& c : cases) {
    const int m = ++*msg;
    const bool sendHoles = c.send == holes, recvHoles = c.recv == holes;
    if (me == 0) {
      t::Buf b(sk, sendHoles ? K * E : K * B);
      b.fill(t::seedOf(0, m));
      T_MPI(MPI_Send(b.ptr(), static_cast<int>(K), c.send, 1, 20, MPI_COMM_WORLD));
    } else if (me == 1) {
      const std::size_t bytes = (recvHoles ? K * E : K * B) + 64;
      t::Buf b(rk, bytes);
      b.poison();
      MPI_Status st;
      T_MPI(MPI_Recv(b.ptr(), static_cast<int>(K), c.recv, 0, 20, MPI_COMM_WORLD, &st));
      int count = -1;
      MPI_Get_count(&st, c.recv, &count);
      T_CHECK(count == static_cast<int>(K) && st.MPI_SOURCE == 0 && st.MPI_TAG == 20,
              "%s %s->%s: count %d (expected %zu), source %d, tag %d", c.name, t::name(sk), t::name(rk), count, K,
              st.MPI_SOURCE, st.MPI_TAG);
      std::vector<std::uint8_t> copy;  // GPU memory is read through a host copy
      if (rk != t::Kind::H) copy = b.get();
      const auto* v = rk == t::Kind::H ? static_cast<const std::uint8_t*>(b.ptr()) : copy.data();
      const std::uint32_t seed = t::seedOf(0, m);
      std::size_t bad = 0, first = 0;
      for (std::size_t p = 0; p < K * B; ++p) {
        const std::size_t to = recvHoles ? at(p) : p, from = sendHoles ? at(p) : p;
        if (v[to] != t::pat(seed, from) && bad++ == 0) first = to;
      }
      T_CHECK(bad == 0, "%s %s->%s: %zu data bytes wrong, the first at offset %zu", c.name, t::name(sk),
              t::name(rk), bad, first);
      std::size_t touched = 0;
      for (std::size_t k = 0; recvHoles && k < K; ++k)
        for (std::size_t j = B; j < E; ++j) touched += v[k * E + j] != 0xA5;
      for (std::size_t j = bytes - 64; j < bytes; ++j) touched += v[j] != 0xA5;
      T_CHECK(touched == 0, "%s %s->%s: %zu bytes of the holes or past the buffer written", c.name, t::name(sk),
              t::name(rk), touched);
    }
  }
  MPI_Type_free(&holes);
  MPI_Type_free(&block);
}

// Through cgdr (--big): one element of more than 2 GiB with holes has no int form for MPI_Pack:
// the send and the receive are refused at once with "operation not supported" (MPI_ERRORS_RETURN),
// before any byte is read or written: the buffers are reserved without access (a touch would fault).
void hugeElement(int me) {
  if (t::size() != 2) return;  // (p2p_datatypes_big runs on two ranks)
  const std::size_t block = (std::size_t{1} << 30) + 64, stride = block + 64, bytes = stride + block;
  MPI_Datatype huge;
  MPI_Type_vector(2, static_cast<int>(block), static_cast<int>(stride), MPI_BYTE, &huge);
  MPI_Type_commit(&huge);
  void* p = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  T_CHECK(p != MAP_FAILED, "reserving %zu bytes failed", bytes);
  if (p == MAP_FAILED) return;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  auto refused = [](int rc, const char* what) {
    std::string text;
    T_CHECK(t::failedAs(rc, MPI_ERR_UNSUPPORTED_OPERATION, "cgdr: operation not supported", &text),
            "%s of one element over 2 GiB with holes: returned %d (\"%s\"), expected operation not supported", what,
            rc, text.c_str());
  };
  t::RefusedSends sink(1 - me, {21}, 64);
  if (me == 0) refused(MPI_Send(p, 1, huge, 1, 21, MPI_COMM_WORLD), "MPI_Send");
  MPI_Request r = MPI_REQUEST_NULL;
  const int rc = MPI_Irecv(p, 1, huge, 1 - me, 22, MPI_COMM_WORLD, &r);  // tag 22: never sent
  refused(rc, "MPI_Irecv");
  if (rc == MPI_SUCCESS) {
    MPI_Cancel(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
  }
  sink.check("a refused send of one element over 2 GiB");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  munmap(p, bytes);
  MPI_Type_free(&huge);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_datatypes");
  const int me = t::rank(), n = t::size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  int msg = 0;
  for (auto [sk, rk] : pairs) {
    for (const Layout& l : layouts()) {
      std::size_t bytes = spanBytes(l.type, l.count);
      // Send/Recv pairs 0 -> 1.
      ++msg;
      if (me == 0) {
        t::Buf b(sk, bytes);
        b.fill(t::seedOf(0, msg));
        T_MPI(MPI_Send(static_cast<char*>(b.ptr()) + l.offset, l.count, l.type, 1, 7, MPI_COMM_WORLD));
      } else if (me == 1) {
        t::Buf b(rk, bytes);
        MPI_Status st;
        T_MPI(MPI_Recv(static_cast<char*>(b.ptr()) + l.offset, l.count, l.type, 0, 7, MPI_COMM_WORLD, &st));
        int c = -1;
        MPI_Get_count(&st, l.type, &c);
        T_CHECK(c == l.count, "%s: Get_count %d, expected %d", l.name, c, l.count);
        char what[80];
        snprintf(what, sizeof what, "%s %s->%s", l.name, t::name(sk), t::name(rk));
        compare(b, expected(l, bytes, t::seedOf(0, msg)), what);
      }
      // Partially filled receive: count elements of the base type.
      ++msg;
      if (me == 0) {
        t::Buf b(sk, bytes);
        b.fill(t::seedOf(0, msg));
        T_MPI(MPI_Send(static_cast<char*>(b.ptr()) + l.offset, 1, l.type, 1, 8, MPI_COMM_WORLD));
      } else if (me == 1) {
        t::Buf b(rk, bytes);
        MPI_Status st;
        T_MPI(MPI_Recv(static_cast<char*>(b.ptr()) + l.offset, l.count, l.type, 0, 8, MPI_COMM_WORLD, &st));
        int c = -1, e = -1, tsize = 0;
        MPI_Get_count(&st, l.type, &c);
        MPI_Get_elements(&st, MPI_BYTE, &e);
        MPI_Type_size(l.type, &tsize);
        T_CHECK(c == 1 && e == tsize, "%s partial: count %d elements %d (type size %d)", l.name, c, e, tsize);
      }
      // Sendrecv in a ring, and Sendrecv_replace in a ring.
      ++msg;
      {
        t::Buf s(sk, bytes), r(rk, bytes);
        s.fill(t::seedOf(me, msg));
        MPI_Status st;
        T_MPI(MPI_Sendrecv(static_cast<char*>(s.ptr()) + l.offset, l.count, l.type, right, 9,
                           static_cast<char*>(r.ptr()) + l.offset, l.count, l.type, left, 9, MPI_COMM_WORLD, &st));
        T_CHECK(st.MPI_SOURCE == left, "sendrecv source %d", st.MPI_SOURCE);
        char what[80];
        snprintf(what, sizeof what, "sendrecv %s %s->%s", l.name, t::name(sk), t::name(rk));
        compare(r, expected(l, bytes, t::seedOf(left, msg)), what);
        t::Buf x(rk, bytes);
        x.fill(t::seedOf(me, msg, 1));
        T_MPI(MPI_Sendrecv_replace(static_cast<char*>(x.ptr()) + l.offset, l.count, l.type, right, 10, left,
                                   10, MPI_COMM_WORLD, &st));
        // Holes keep this rank's own bytes; covered bytes come from the left neighbour.
        std::vector<std::uint8_t> mine(bytes);
        for (std::size_t i = 0; i < bytes; ++i) mine[i] = t::pat(t::seedOf(me, msg, 1), i);
        auto want = expected(l, bytes, t::seedOf(left, msg, 1), &mine);
        snprintf(what, sizeof what, "sendrecv_replace %s %s", l.name, t::name(rk));
        compare(x, want, what);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (t::arg(argc, argv, "--big", "no") == "yes") {
    for (auto [sk, rk] : pairs) big(me, &msg, sk, rk);
    const char* pre = std::getenv("CGDRTEST_PRELOADED");  // (the real MPI alone would read it all)
    if (pre && std::strcmp(pre, "1") == 0) hugeElement(me);
  }
  return t::finish("p2p_datatypes");
}
