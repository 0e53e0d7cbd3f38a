// Helpers shared by the collective entry points: the GPU-less fast path, and turning a staged
// non-blocking or persistent collective into a cgdr request.
#pragma once
#include <functional>
#include <memory>

#include "base/cuda.hpp"
#include "base/errors.hpp"
#include "coll/coll_op.hpp"
#include "coll/plans.hpp"
#include "engine/handles.hpp"
#include "engine/helper.hpp"
#include "engine/progress.hpp"
#include "interpose/guard.hpp"

// A call without a communicator (MPI_Reduce_local, the external32 pack calls) goes straight to
// the real MPI when cgdr is not active or no GPU is usable (then no buffer can be GPU memory).
#define CGDR_LOCAL_ENTER(passthrough) \
  CGDR_ENTER(passthrough);            \
  if (!::cgdr::base::cuda::usable()) return passthrough

// A collective (or a pack call) on a communicator: also straight to the real MPI on
// MPI_COMM_NULL, which the MPI refuses once through its handler. Planning would ask the MPI about
// the communicator first, and each such query would call the handler too, naming the wrong call.
#define CGDR_COLL_ENTER(comm, passthrough)                                     \
  CGDR_ENTER(passthrough);                                                     \
  if (!::cgdr::base::cuda::usable() || (comm) == MPI_COMM_NULL) return passthrough

// A blocking collective stays blocking on every rank (MPI never matches it with a non-blocking
// one); while it blocks, the engine's helper thread serves co-located peers.
#define CGDR_BLOCKING_COLL_ENTER(comm, passthrough)                                      \
  CGDR_ENTER(passthrough);                                                               \
  if ((comm) == MPI_COMM_NULL) return passthrough;                                       \
  ::cgdr::engine::beforeBlocking();                                                      \
  ::cgdr::engine::BlockingScope cgdrScope_;                                              \
  if (!::cgdr::base::cuda::usable()) return passthrough

namespace cgdr::interpose {

// Blocking collective on staged buffers (queued sends were handed over at entry).
inline int blockingColl(MPI_Comm c, coll::Staging& st, const std::function<int()>& blocking) {
  return coll::runBlocking(c, st, blocking);
}

// A non-blocking (Op = coll::CollOp) or persistent (Op = coll::PersistentCollOp: MPI_*_init,
// each MPI_Start refreshes the staged inputs) collective: with GPU buffers the user gets a cgdr
// request over the real one made on the staged buffers, which copies results back when it
// completes; otherwise the real request itself. A refused buffer leaves MPI_REQUEST_NULL, as a
// refused point-to-point call does. A null request pointer with GPU buffers is an MPI_ERR_ARG
// (with host buffers the real MPI's to judge: MPICH refuses it, Open MPI 4.1 crashes).
template <typename Op>
int stagedRequest(MPI_Comm c, std::unique_ptr<coll::Staging> st, MPI_Request* req,
                  const std::function<int(MPI_Request*)>& call) {
  base::Status s = st->stageIn();
  if (!s.isOk()) {
    if (req) *req = MPI_REQUEST_NULL;
    return base::raise(c, s);
  }
  if (!st->any()) return call(req);
  if (!req)
    return base::raise(c, base::Status(base::Errc::kArgument, "the request pointer of a collective call is null"));
  MPI_Request inner = MPI_REQUEST_NULL;
  int rc = call(&inner);
  if (rc != MPI_SUCCESS) return rc;
  *req = engine::handles::add(std::make_unique<Op>(std::move(st), inner, c));
  return MPI_SUCCESS;
}

inline int startColl(MPI_Comm c, std::unique_ptr<coll::Staging> st, MPI_Request* req,
                     const std::function<int(MPI_Request*)>& call) {
  return stagedRequest<coll::CollOp>(c, std::move(st), req, call);
}

inline int initColl(MPI_Comm c, std::unique_ptr<coll::Staging> st, MPI_Request* req,
                    const std::function<int(MPI_Request*)>& call) {
  return stagedRequest<coll::PersistentCollOp>(c, std::move(st), req, call);
}

}  // namespace cgdr::interpose
