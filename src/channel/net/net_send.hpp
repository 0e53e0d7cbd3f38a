// A send handed to the real MPI by cgdr: device data is first copied into pinned staging, and the
// message is posted only when every earlier send to the same (communicator, peer) was posted,
// so MPI's non-overtaking rule holds although the copy finishes later than the call returns.
#pragma once
#include <atomic>
#include <memory>

#include "base/msg.hpp"
#include "base/op.hpp"
#include "channel/net/staged_span.hpp"

namespace cgdr::channel::net {

class NetSend final : public base::Op {
 public:
  // Starts the copy out of the GPU (when m is GPU memory) and queues the send.
  static base::Result<std::unique_ptr<NetSend>> create(const base::SendArgs& a, const mem::MemInfo& m,
                                                      const base::Span& s);
  ~NetSend() override;

  bool poll() override;
  int cancel() override;

  // For the per-peer queue: whether the staging copy has finished (no blocking), blocking wait,
  // and handing the message to the real MPI.
  bool copyDone();
  void copyWait();
  void post();
  MPI_Comm queueComm() const { return args_.comm; }
  int queuePeer() const { return args_.peer; }

 private:
  enum class State { kQueued, kPosted, kDone };
  NetSend() = default;
  void finish();

  base::SendArgs args_{};
  StagedSpan staged_;
  bool onGpu_ = false;
  mem::GpuCopy copy_;
  MPI_Request inner_ = MPI_REQUEST_NULL;
  std::atomic<State> state_{State::kQueued};
};

}  // namespace cgdr::channel::net
