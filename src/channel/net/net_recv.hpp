// A receive into GPU memory through the real MPI: posted at once into pinned staging with the
// application's count and datatype; when the real MPI completes it, the covered bytes are copied
// to the GPU, and only then does the operation complete.
#pragma once
#include <memory>

#include "base/msg.hpp"
#include "base/op.hpp"
#include "channel/net/staged_span.hpp"

namespace cgdr::channel::net {

class NetRecv final : public base::Op {
 public:
  // Posts the receive; with `message` it is a matched receive (MPI_Imrecv) of that message.
  static base::Result<std::unique_ptr<NetRecv>> create(const base::RecvArgs& a, const mem::MemInfo& m,
                                                      const base::Span& s, MPI_Message* message);
  bool poll() override;
  int cancel() override;

 private:
  enum class State { kReceiving, kCopying, kDone };
  NetRecv() = default;
  bool startCopyBack();

  base::RecvArgs args_{};
  StagedSpan staged_;
  mem::GpuCopy copy_;
  MPI_Request inner_ = MPI_REQUEST_NULL;
  State state_ = State::kReceiving;
};

}  // namespace cgdr::channel::net
