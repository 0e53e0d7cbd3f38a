#include "engine/persistent.hpp"

#include <memory>
#include <variant>

#include "base/errors.hpp"
#include "engine/checks.hpp"
#include "engine/handles.hpp"
#include "engine/p2p.hpp"
#include "engine/progress.hpp"

namespace cgdr::engine {
using base::raise;
using base::settleError;
namespace {

class PersistentP2p final : public base::Op {
 public:
  explicit PersistentP2p(std::variant<base::SendArgs, base::RecvArgs> args) : args_(args) {
    comm = std::visit([](auto& a) { return a.comm; }, args_);
    base::setEmptyStatus(&status);
  }

  bool persistent() const override { return true; }
  bool active() const override { return active_; }

  int start() override {
    if (active_) return raise(comm, base::Status(base::Errc::kArgument,
                                                 "MPI_Start on a request that is still active"));
    auto op = std::holds_alternative<base::SendArgs>(args_)
                  ? makeSend(std::get<base::SendArgs>(args_))
                  : makeRecv(std::get<base::RecvArgs>(args_));
    if (!op.isOk()) return raise(comm, op.status());
    current_ = std::move(op.value());
    active_ = true;
    error = MPI_SUCCESS;
    errorRaised = false;
    failure = base::Status();
    return MPI_SUCCESS;
  }

  bool poll() override {
    if (!active_ || !current_) return true;
    if (!current_->poll()) return false;
    status = current_->status;
    error = current_->error;
    errorRaised = current_->errorRaised;
    failure = current_->failure;
    return true;
  }

  int cancel() override { return current_ ? current_->cancel() : MPI_SUCCESS; }

  void retire() override {
    active_ = false;
    current_.reset();
    base::setEmptyStatus(&status);
  }

 private:
  std::variant<base::SendArgs, base::RecvArgs> args_;
  std::unique_ptr<base::Op> current_;
  bool active_ = false;
};

}  // namespace

int sendInit(const base::SendArgs& a, MPI_Request* r) {
  if (int rc = checks::send(a, checks::Call::kPersistent, r); rc != MPI_SUCCESS) return rc;
  *r = handles::add(std::make_unique<PersistentP2p>(a));
  return MPI_SUCCESS;
}

int recvInit(const base::RecvArgs& a, MPI_Request* r) {
  if (int rc = checks::recv(a, checks::Call::kPersistent, r); rc != MPI_SUCCESS) return rc;
  *r = handles::add(std::make_unique<PersistentP2p>(a));
  return MPI_SUCCESS;
}

int start(MPI_Request* r) {
  if (!r) return PMPI_Start(r);  // the real MPI reports it
  base::Op* op = handles::find(*r);
  if (!op) return PMPI_Start(r);
  return op->start();
}

int startall(int n, MPI_Request* rs) {
  if (n < 0 || (n > 0 && !rs)) return PMPI_Startall(n, rs);  // the real MPI reports it
  int rc = MPI_SUCCESS;
  for (int i = 0; i < n && rc == MPI_SUCCESS; ++i) rc = start(&rs[i]);
  return rc;
}

}  // namespace cgdr::engine
