// Collective operations on staged GPU buffers that complete inside the wait/test calls: a
// non-blocking collective, and a persistent one (MPI_*_init) that refreshes its inputs at each
// MPI_Start.
#pragma once
#include <functional>
#include <memory>

#include "base/op.hpp"
#include "coll/staging.hpp"

namespace cgdr::coll {

class CollOp final : public base::Op {
 public:
  CollOp(std::unique_ptr<Staging> staging, MPI_Request inner, MPI_Comm c);
  bool poll() override;

 private:
  enum class State { kRunning, kCopying, kDone };
  std::unique_ptr<Staging> staging_;
  MPI_Request inner_;
  State state_ = State::kRunning;
};

class PersistentCollOp final : public base::Op {
 public:
  PersistentCollOp(std::unique_ptr<Staging> staging, MPI_Request inner, MPI_Comm c);
  ~PersistentCollOp() override;
  bool persistent() const override { return true; }
  bool active() const override { return active_; }
  int start() override;
  bool poll() override;
  void retire() override;

 private:
  enum class State { kRunning, kCopying, kDone };
  std::unique_ptr<Staging> staging_;
  MPI_Request inner_;
  State state_ = State::kDone;
  bool active_ = false;
};

// Runs a blocking collective: stages, calls `call` (which uses staging.ptr()), copies back what
// it wrote (nothing where the MPI refused the call).
int runBlocking(MPI_Comm comm, Staging& staging, const std::function<int()>& call);

}  // namespace cgdr::coll
