// Receives that must wait their turn before the real MPI sees them: while an MPI_ANY_SOURCE
// receive on a communicator with both co-located and remote peers is pending (it polls the
// engine and the real MPI's matched probe), receives posted after it from remote peers are held,
// so the real MPI cannot match a message to a later receive first (ARCHITECTURE.md §3).
#pragma once
#include <memory>

#include "base/msg.hpp"
#include "base/op.hpp"

namespace cgdr::engine {

class ShmEngine;

class HeldRecv final : public base::Op {
 public:
  HeldRecv(ShmEngine& e, const base::RecvArgs& a);
  ~HeldRecv() override;
  bool poll() override;
  int cancel() override;
  // Posts it to the real MPI (engine mutex held; called in posting order).
  void release();

 private:
  ShmEngine& e_;
  base::RecvArgs args_;
  std::unique_ptr<base::Op> real_;
  bool cancelled_ = false;
  bool released_ = false;
};

}  // namespace cgdr::engine
