// Errors: truncation reported as MPI_ERR_TRUNCATE with MPI_ERRORS_RETURN (and nothing written past
// the buffer; in MPI_Sendrecv(_replace) the other half still completes), cancelled receives,
// cancel of sends where the MPI allows it, and - with GPUs - a freed or foreign device pointer, or
// a count running past the end of its GPU allocation, reported as an MPI error naming the cause
// instead of a crash, while messages that end exactly at the allocation's end (also one made of
// several cuMem allocations mapped back to back) arrive whole.
#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "testlib.hpp"
#include <mpi-ext.h>

#if CGDR_HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>

#include "user_side.hpp"
#endif

static_assert(MPIX_CUDA_AWARE_SUPPORT == 1, "cgdr's mpi-ext.h must be the one included");

namespace {

void truncation(t::Kind sk, t::Kind rk, int msg) {
  const std::size_t sent = 1000, room = 500;
  if (t::rank() == 0) {
    t::Buf b(sk, sent);
    b.fill(t::seedOf(0, msg));
    T_MPI(MPI_Send(b.ptr(), sent, MPI_BYTE, 1, 40, MPI_COMM_WORLD));
    T_MPI(MPI_Send(b.ptr(), sent, MPI_BYTE, 1, 41, MPI_COMM_WORLD));
  } else if (t::rank() == 1) {
    t::Buf b(rk, room + 64);
    MPI_Status st;
    int rc = MPI_Recv(b.ptr(), room, MPI_BYTE, 0, 40, MPI_COMM_WORLD, &st);
    T_CHECK(t::errorClass(rc) == MPI_ERR_TRUNCATE, "blocking truncation: error class %d", t::errorClass(rc));
    b.untouchedPast(room, "truncated MPI_Recv");
    b.poison();
    MPI_Request r;
    T_MPI(MPI_Irecv(b.ptr(), room, MPI_BYTE, 0, 41, MPI_COMM_WORLD, &r));
    rc = MPI_Wait(&r, &st);
    T_CHECK(t::errorClass(rc) == MPI_ERR_TRUNCATE, "non-blocking truncation: error class %d", t::errorClass(rc));
    b.untouchedPast(room, "truncated MPI_Irecv");
  }
}

// MPI_Sendrecv and MPI_Sendrecv_replace where rank 1's receive truncates: rank 1 gets
// MPI_ERR_TRUNCATE and nothing past its buffer changes, while its send still arrives whole and
// rank 0's call succeeds with the right status.
void sendrecvTruncation(t::Kind sk, t::Kind rk, int msg) {
  const std::size_t big = 1000, room = 500;
  const int me = t::rank();
  if (me > 1) return;
  const int peer = 1 - me;
  MPI_Comm w = MPI_COMM_WORLD;
  MPI_Status st;
  {
    t::Buf out(sk, big), in(rk, big + 64);
    out.fill(t::seedOf(me, msg));
    in.poison();
    const int cap = me == 1 ? room : big;
    int rc = MPI_Sendrecv(out.ptr(), big, MPI_BYTE, peer, 50, in.ptr(), cap, MPI_BYTE, peer, 50, w, &st);
    if (me == 1) {
      T_CHECK(t::errorClass(rc) == MPI_ERR_TRUNCATE, "Sendrecv, receive truncated: error class %d", t::errorClass(rc));
      in.untouchedPast(room, "truncated Sendrecv");
    } else {
      T_CHECK(rc == MPI_SUCCESS, "Sendrecv against a peer whose receive truncates: error class %d",
              t::errorClass(rc));
      in.expect(t::seedOf(peer, msg), big, "Sendrecv against a peer whose receive truncates");
      int n = -1;
      MPI_Get_count(&st, MPI_BYTE, &n);
      T_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 50 && n == static_cast<int>(big),
              "Sendrecv against a truncating peer: status source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, n);
    }
  }
  // MPI_Sendrecv_replace: rank 1 offers `room` bytes and is sent `big`; rank 0 gets rank 1's `room`.
  const std::size_t mine = me == 1 ? room : big;
  t::Buf b(sk, mine + 64);
  b.fill(t::seedOf(me, msg + 1000), mine);
  int rc = MPI_Sendrecv_replace(b.ptr(), static_cast<int>(mine), MPI_BYTE, peer, 51, peer, 51, w, &st);
  if (me == 1) {
    T_CHECK(t::errorClass(rc) == MPI_ERR_TRUNCATE, "Sendrecv_replace, receive truncated: error class %d",
            t::errorClass(rc));
    b.untouchedPast(room, "truncated Sendrecv_replace");
  } else {
    T_CHECK(rc == MPI_SUCCESS, "Sendrecv_replace against a truncating peer: error class %d", t::errorClass(rc));
    auto got = b.get();
    t::Buf want(t::Kind::H, room);
    want.fill(t::seedOf(peer, msg + 1000));
    auto w8 = want.get();
    T_CHECK(std::equal(w8.begin(), w8.end(), got.begin()), "Sendrecv_replace against a truncating peer: the %zu bytes "
            "received differ from the peer's", room);
    int n = -1;
    MPI_Get_count(&st, MPI_BYTE, &n);
    T_CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 51 && n == static_cast<int>(room),
            "Sendrecv_replace against a truncating peer: status source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG,
            n);
  }
}

void cancelRecv(t::Kind rk) {
  t::Buf b(rk, 4096);
  MPI_Request r;
  T_MPI(MPI_Irecv(b.ptr(), 4096, MPI_BYTE, MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &r));
  T_MPI(MPI_Cancel(&r));
  MPI_Status st;
  T_MPI(MPI_Wait(&r, &st));
  int cancelled = 0;
  MPI_Test_cancelled(&st, &cancelled);
  T_CHECK(cancelled, "cancelled receive (%s) not reported as cancelled", t::name(rk));
  T_CHECK(r == MPI_REQUEST_NULL, "cancelled request not freed");
}

// A send nobody has posted a receive for is cancelled; where the MPI cannot cancel it (Open MPI
// cannot cancel sends), the peer must be able to receive it while the sender waits.
void cancelSend(t::Kind sk) {
  const int n = 64 << 10;
  if (t::rank() == 0) {
    t::Buf b(sk, n);
    b.fill(t::seedOf(0, 4343));
    MPI_Request r;
    T_MPI(MPI_Isend(b.ptr(), n, MPI_BYTE, 1, 4343, MPI_COMM_WORLD, &r));
    T_MPI(MPI_Cancel(&r));
    MPI_Status st;
    T_MPI(MPI_Wait(&r, &st));
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    T_MPI(MPI_Send(&cancelled, 1, MPI_INT, 1, 4344, MPI_COMM_WORLD));
  } else if (t::rank() == 1) {
    bool got = false;
    int cancelled = -1;
    while (cancelled < 0 || (!cancelled && !got)) {
      int flag = 0;
      MPI_Status st;
      if (!got) T_MPI(MPI_Iprobe(0, 4343, MPI_COMM_WORLD, &flag, &st));
      if (flag) {
        t::Buf b(t::Kind::H, n);
        T_MPI(MPI_Recv(b.ptr(), n, MPI_BYTE, 0, 4343, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        b.expect(t::seedOf(0, 4343), n, "send that was not cancelled");
        got = true;
      }
      if (cancelled < 0) {
        T_MPI(MPI_Iprobe(0, 4344, MPI_COMM_WORLD, &flag, &st));
        if (flag) T_MPI(MPI_Recv(&cancelled, 1, MPI_INT, 0, 4344, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
      }
    }
    T_CHECK(!(cancelled && got), "a send reported cancelled was also received");
  }
}

// With cgdr and a GPU: a freed device pointer and a pointer into nothing are MPI errors.
void invalidPointers() {
#if CGDR_HAVE_CUDA
  if (!MPIX_Query_cuda_support()) return;  // plain MPI: there is no one to catch it
  void* d = nullptr;
  cudaMalloc(&d, 1 << 20);
  cudaFree(d);
  void* foreign = reinterpret_cast<void*>(0x10);  // never mapped
  for (void* p : {d, foreign}) {
    int rc = MPI_Send(p, 1 << 20, MPI_BYTE, t::rank() ^ 1, 50, MPI_COMM_WORLD);
    T_CHECK(t::errorClass(rc) == MPI_ERR_BUFFER, "send from %p: error class %d, expected MPI_ERR_BUFFER", p, t::errorClass(rc));
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, s, &len);
    T_CHECK(std::strstr(s, "freed or foreign") != nullptr, "error string does not name the cause: %s", s);
    MPI_Request r = MPI_REQUEST_NULL;
    rc = MPI_Irecv(p, 1 << 20, MPI_BYTE, t::rank() ^ 1, 51, MPI_COMM_WORLD, &r);
    T_CHECK(t::errorClass(rc) == MPI_ERR_BUFFER, "irecv into %p: error class %d", p, t::errorClass(rc));
  }
#endif
}

#if CGDR_HAVE_CUDA
// What the driver says of the allocation holding p, for failure messages.
std::string driverRange(const void* p) {
  auto attr = cgdr::user::driverEntry<decltype(&cuPointerGetAttribute)>("cuPointerGetAttribute");
  CUdeviceptr start = 0;
  std::size_t size = 0;
  auto d = reinterpret_cast<CUdeviceptr>(p);
  bool ok = attr && attr(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, d) == CUDA_SUCCESS &&
            attr(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d) == CUDA_SUCCESS;
  char s[80];
  std::snprintf(s, sizeof s, "driver range %s%#llx + %zu", ok ? "" : "(unknown) ", static_cast<unsigned long long>(start),
                size);
  return s;
}

// A send and a receive whose count runs past the end of the GPU allocation at p (room bytes from
// p to its end, or to a hole of its range) are refused with MPI_ERR_BUFFER naming the cause;
// nothing is sent. (Receives into host memory are posted for the sends first, so a send wrongly
// let through cannot hang the test.)
void refusedPast(char* p, std::size_t room, const char* what, const char* cause = "runs past the end") {
  std::string s;
  int peer = t::rank() ^ 1;
  t::RefusedSends drains(peer, {60, 60, 62}, room + 4096);
  for (std::size_t over : {std::size_t{1}, std::size_t{4096}}) {
    int rc = MPI_Send(p, static_cast<int>(room + over), MPI_BYTE, peer, 60, MPI_COMM_WORLD);
    T_CHECK(t::refusedWith(rc, cause, &s), "%s: send of %zu bytes with %zu left: \"%s\" (%s)", what, room + over,
            room, s.c_str(), driverRange(p).c_str());
    MPI_Request r = MPI_REQUEST_NULL;
    rc = MPI_Irecv(p, static_cast<int>(room + over), MPI_BYTE, peer, 61, MPI_COMM_WORLD, &r);
    T_CHECK(t::refusedWith(rc, cause, &s), "%s: receive of %zu bytes with %zu left: \"%s\"", what, room + over,
            room, s.c_str());
    T_CHECK(r == MPI_REQUEST_NULL, "%s: a refused receive left a request", what);
    if (r != MPI_REQUEST_NULL) {
      MPI_Cancel(&r);
      MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
  }
  // A datatype whose span (not its data) passes the end: 2 bytes 1 + room apart.
  MPI_Datatype spread;
  int lens[2] = {1, 1};
  MPI_Aint disps[2] = {0, static_cast<MPI_Aint>(room)};
  MPI_Type_create_hindexed(2, lens, disps, MPI_BYTE, &spread);
  MPI_Type_commit(&spread);
  int rc = MPI_Send(p, 1, spread, peer, 62, MPI_COMM_WORLD);
  T_CHECK(t::refusedWith(rc, cause, &s), "%s: a datatype reaching 1 byte past the end: \"%s\"", what, s.c_str());
  MPI_Type_free(&spread);
  drains.check(what);
}

// n bytes at src to the peer's dst and back the other way at once, every byte checked.
void exchangeExact(char* src, char* dst, std::size_t n, int msg, const char* what) {
  std::uint32_t mine = t::seedOf(t::rank(), msg), theirs = t::seedOf(t::rank() ^ 1, msg);
  std::vector<std::uint8_t> h(n);
  for (std::size_t i = 0; i < n; ++i) h[i] = t::pat(mine, i);
  cudaMemcpy(src, h.data(), n, cudaMemcpyDefault);
  cudaMemset(dst, 0xA5, n);
  cudaDeviceSynchronize();
  MPI_Request r[2];
  T_MPI(MPI_Irecv(dst, static_cast<int>(n), MPI_BYTE, t::rank() ^ 1, 70 + msg, MPI_COMM_WORLD, &r[0]));
  T_MPI(MPI_Isend(src, static_cast<int>(n), MPI_BYTE, t::rank() ^ 1, 70 + msg, MPI_COMM_WORLD, &r[1]));
  T_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
  cudaMemcpy(h.data(), dst, n, cudaMemcpyDefault);
  for (std::size_t i = 0; i < n; ++i)
    if (h[i] != t::pat(theirs, i)) {
      T_CHECK(false, "%s: %zu bytes ending at the allocation's end: byte %zu is %#x, expected %#x", what, n, i, h[i],
              t::pat(theirs, i));
      return;
    }
}
#endif

// With cgdr and a GPU: counts that run past the end of device, managed and pieced cuMem memory
// are MPI errors; messages up to the last byte of each arrive whole.
void overruns() {
#if CGDR_HAVE_CUDA
  if (!MPIX_Query_cuda_support()) return;
  const std::size_t n = 4096 + 100;  // not a multiple of any granule or alignment
  for (int managed = 0; managed < 2; ++managed) {
    const char* what = managed ? "cudaMallocManaged" : "cudaMalloc";
    char *a = nullptr, *b = nullptr;
    if (managed) {
      cudaMallocManaged(&a, n);
      cudaMallocManaged(&b, n);
    } else {
      cudaMalloc(&a, n);
      cudaMalloc(&b, n);
    }
    T_CHECK(a && b, "%s of %zu bytes", what, n);
    refusedPast(a, n, what);
    refusedPast(a + n - 1, 1, what);
    refusedPast(b + 1000, n - 1000, what);
    exchangeExact(a, b, n, managed * 4, what);
    exchangeExact(a + n - 1, b + n - 1, 1, managed * 4 + 1, what);
    exchangeExact(a + 333, b + 777, n - 777, managed * 4 + 2, what);
    cudaFree(a);
    cudaFree(b);
  }
  // One buffer to its program, three allocations to the driver.
  cgdr::user::VmmAlloc a, b;
  const char* what = "";
  T_CHECK(cgdr::user::vmmAlloc(1, &a, &what, 3) && cgdr::user::vmmAlloc(1, &b, &what, 3), "%s failed", what);
  if (!a.ptr || !b.ptr) return;
  char *pa = static_cast<char*>(a.ptr), *pb = static_cast<char*>(b.ptr);
  std::size_t piece = a.size / 3;
  refusedPast(pa, a.size, "3 cuMem allocations back to back");
  refusedPast(pa + piece + 5, a.size - piece - 5, "3 cuMem allocations back to back");
  exchangeExact(pa, pb, a.size, 8, "3 cuMem allocations back to back");
  exchangeExact(pa + piece - 7, pb + 3, a.size - piece + 7, 9, "3 cuMem allocations, from the first's end");
  // A reserved range is one range to the driver however little of it is mapped: 3 pieces with the
  // middle one unmapped, and a range grown only to its first piece.
  cgdr::user::VmmAlloc h, f;
  T_CHECK(cgdr::user::vmmAlloc(1, &h, &what, 3, 0b010) && cgdr::user::vmmAlloc(1, &f, &what, 3, 0b110), "%s failed",
          what);
  if (h.ptr && f.ptr) {
    char *ph = static_cast<char*>(h.ptr), *pf = static_cast<char*>(f.ptr);
    const char* hole = "a hole nothing is mapped to";
    refusedPast(ph, piece, "3 cuMem pieces, the middle one unmapped", hole);
    refusedPast(ph + piece - 9, 9, "3 cuMem pieces, the middle one unmapped", hole);
    refusedPast(pf + 1, piece - 1, "the first of 3 cuMem pieces mapped", hole);
    {  // a pointer into the hole itself
      t::RefusedSends drains(t::rank() ^ 1, {63}, 4096);
      std::string s;
      int rc = MPI_Send(ph + piece + 8, 100, MPI_BYTE, t::rank() ^ 1, 63, MPI_COMM_WORLD);
      T_CHECK(t::refusedWith(rc, "freed or foreign", &s), "a send from a reserved range's unmapped hole: \"%s\"",
              s.c_str());
      drains.check("a send from a hole");
    }
    exchangeExact(ph, pa, piece, 10, "the piece before a hole");
    exchangeExact(ph + piece - 9, pf + 17, 9, 11, "the last bytes before a hole");
    exchangeExact(ph + 2 * piece, pf, piece, 12, "the piece after a hole, into a range grown to one piece");
  }
  cgdr::user::vmmFree(h);
  cgdr::user::vmmFree(f);
  cgdr::user::vmmFree(a);
  cgdr::user::vmmFree(b);
#endif
}

// With cgdr and a GPU, on every rank at once (a rank alone refused would leave the others waiting
// in the collective, as with any erroneous collective call): collectives whose GPU buffers run past
// their allocations are refused, a non-blocking one leaves no request, and the same buffers then
// serve exact counts, every byte checked.
void collOverruns() {
#if CGDR_HAVE_CUDA
  if (!MPIX_Query_cuda_support()) return;
  const int ints = 1049;  // 4196 bytes
  const std::size_t n = ints * sizeof(int);
  int size = t::size();
  char *a = nullptr, *b = nullptr;
  cudaMalloc(&a, n);
  cudaMalloc(&b, n * size);
  T_CHECK(a && b, "cudaMalloc");
  if (!a || !b) return;
  std::vector<int> host(ints * size + 64);
  std::string s;
  int rc = MPI_Allreduce(a, b, ints + 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  T_CHECK(t::refusedWith(rc, "runs past the end", &s), "allreduce of %d ints from %zu bytes: \"%s\"", ints + 1, n,
          s.c_str());
  rc = MPI_Allreduce(a + 8, host.data(), ints - 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  T_CHECK(t::refusedWith(rc, "runs past the end", &s), "allreduce whose send buffer alone runs over: \"%s\"",
          s.c_str());
  rc = MPI_Bcast(a + 100, static_cast<int>(n) - 99, MPI_BYTE, 0, MPI_COMM_WORLD);
  T_CHECK(t::refusedWith(rc, "runs past the end", &s), "bcast 1 byte over: \"%s\"", s.c_str());
  rc = MPI_Allgather(a, ints, MPI_INT, b + 4, ints, MPI_INT, MPI_COMM_WORLD);
  T_CHECK(t::refusedWith(rc, "runs past the end", &s), "allgather whose receive buffer runs over: \"%s\"", s.c_str());
  MPI_Request r = MPI_REQUEST_NULL;
  rc = MPI_Iallreduce(a, b, ints + 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
  T_CHECK(t::refusedWith(rc, "runs past the end", &s), "iallreduce 1 int over: \"%s\"", s.c_str());
  T_CHECK(r == MPI_REQUEST_NULL, "a refused iallreduce left a request");
  if (r != MPI_REQUEST_NULL) MPI_Wait(&r, MPI_STATUS_IGNORE);
  // Exact counts: the allgather places every rank's pattern, the allreduce xors them.
  std::vector<std::uint8_t> mine(n);
  for (std::size_t i = 0; i < n; ++i) mine[i] = t::pat(t::seedOf(t::rank(), 90), i);
  cudaMemcpy(a, mine.data(), n, cudaMemcpyHostToDevice);
  T_MPI(MPI_Allgather(a, ints, MPI_INT, b, ints, MPI_INT, MPI_COMM_WORLD));
  std::vector<std::uint8_t> got(n * size);
  cudaMemcpy(got.data(), b, n * size, cudaMemcpyDeviceToHost);
  for (int q = 0; q < size; ++q)
    for (std::size_t i = 0; i < n; ++i)
      if (got[q * n + i] != t::pat(t::seedOf(q, 90), i)) {
        T_CHECK(false, "allgather after refusals: rank %d's byte %zu is %#x, expected %#x", q, i, got[q * n + i],
                t::pat(t::seedOf(q, 90), i));
        q = size;
        break;
      }
  T_MPI(MPI_Allreduce(a, b + n * (size - 1), ints, MPI_INT, MPI_BXOR, MPI_COMM_WORLD));
  std::vector<std::uint8_t> x(n);
  cudaMemcpy(x.data(), b + n * (size - 1), n, cudaMemcpyDeviceToHost);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t want = 0;
    for (int q = 0; q < size; ++q) want ^= t::pat(t::seedOf(q, 90), i);
    if (x[i] != want) {
      T_CHECK(false, "allreduce (bxor) to the last byte of its buffer: byte %zu is %#x, expected %#x", i, x[i], want);
      break;
    }
  }
  cudaFree(a);
  cudaFree(b);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  auto pairs = t::kindPairs(argc, argv);
  t::setup(pairs, "p2p_errors");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const char* pre = std::getenv("CGDRTEST_PRELOADED");
  if (pre && std::strcmp(pre, "1") == 0)
    T_CHECK(MPIX_Query_cuda_support() == (t::gpuAvailable() ? 1 : 0),
            "MPIX_Query_cuda_support() = %d with cgdr, GPU available = %d", MPIX_Query_cuda_support(),
            t::gpuAvailable());
  int msg = 0;
  for (auto [sk, rk] : pairs) {
    truncation(sk, rk, ++msg);
    sendrecvTruncation(sk, rk, ++msg);
    cancelRecv(rk);
    cancelSend(sk);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  bool gpuKinds = false;
  for (auto [a, b] : pairs) gpuKinds = gpuKinds || a != t::Kind::H || b != t::Kind::H;
  if (gpuKinds && t::size() >= 2) {
    invalidPointers();
    overruns();
    collOverruns();
  }
  return t::finish("p2p_errors");
}
