// A request of the real MPI owned by a cgdr operation (e.g. one start of a persistent send).
#pragma once
#include "base/op.hpp"

namespace cgdr::engine {

class RealOp final : public base::Op {
 public:
  RealOp(MPI_Request r, MPI_Comm c) : request_(r) { comm = c; }
  ~RealOp() override {
    if (request_ != MPI_REQUEST_NULL) PMPI_Request_free(&request_);
  }
  bool poll() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int flag = 0;
    int rc = PMPI_Test(&request_, &flag, &status);
    if (rc != MPI_SUCCESS) {
      error = rc;
      errorRaised = true;
      request_ = MPI_REQUEST_NULL;
      return true;
    }
    return flag != 0;
  }
  int cancel() override { return request_ == MPI_REQUEST_NULL ? MPI_SUCCESS : PMPI_Cancel(&request_); }

 private:
  MPI_Request request_;
};

}  // namespace cgdr::engine
