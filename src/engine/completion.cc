#include "engine/completion.hpp"

#include <vector>

#include "base/errors.hpp"
#include "engine/handles.hpp"
#include "engine/p2p.hpp"
#include "engine/progress.hpp"

namespace cgdr::engine {
using base::raise;
using base::settleError;
namespace {

// Reports a completed op to the user: status, error, and the handle released (or, for a
// persistent request, made inactive).
int complete(MPI_Request* r, base::Op* op, MPI_Status* st) {
  if (st != MPI_STATUS_IGNORE) *st = op->status;
  int err = settleError(op->comm, op->error, op->errorRaised, op->failure);
  op->errorRaised = true;
  if (op->persistent()) {
    op->retire();
  } else {
    auto owned = handles::take(*r);
    *r = MPI_REQUEST_NULL;
  }
  return err;
}

// The array split into cgdr ops (ops[i] != nullptr) and a copy of the real requests with cgdr's
// replaced by MPI_REQUEST_NULL, which the real MPI's own wait/test calls can take whole.
struct Split {
  std::vector<base::Op*> ops;
  std::vector<MPI_Request> real;
  bool anyOurs = false;

  Split(int n, MPI_Request rs[]) : ops(n, nullptr), real(rs, rs + n) {
    for (int i = 0; i < n; ++i) {
      ops[i] = handles::find(rs[i]);
      if (ops[i]) {
        real[i] = MPI_REQUEST_NULL;
        anyOurs = true;
      }
    }
  }
  bool activeOurs(int i) const { return ops[i] && ops[i]->active(); }
};

MPI_Status* at(MPI_Status sts[], int i) {
  return sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[i];
}

// Merges per-request errors into the array calls' convention (MPI_ERR_IN_STATUS).
int mergeErrors(const std::vector<int>& errs, MPI_Status sts[]) {
  bool any = false;
  for (int e : errs) any = any || e != MPI_SUCCESS;
  if (!any) return MPI_SUCCESS;
  if (sts != MPI_STATUSES_IGNORE)
    for (size_t k = 0; k < errs.size(); ++k) sts[k].MPI_ERROR = errs[k];
  return MPI_ERR_IN_STATUS;
}

// Real-MPI array results come with MPI_ERROR filled only on MPI_ERR_IN_STATUS.
int realError(int rc, const MPI_Status& st) {
  if (rc == MPI_ERR_IN_STATUS) return st.MPI_ERROR;
  return rc;
}

// A single-request call's completion: the status's MPI_ERROR field is left as it was.
int completeOne(MPI_Request* r, base::Op* op, MPI_Status* st) {
  int keep = st != MPI_STATUS_IGNORE ? st->MPI_ERROR : 0;
  int err = complete(r, op, st);
  if (st != MPI_STATUS_IGNORE) st->MPI_ERROR = keep;
  return err;
}

// The end of an all-complete array call: cgdr's ops completed, the real requests and statuses
// copied back from the real MPI's call (which returned realRc), errors merged.
int finishAll(int n, MPI_Request rs[], MPI_Status sts[], const Split& s, int realRc,
              const std::vector<MPI_Status>& realSt) {
  if (realRc != MPI_SUCCESS && realRc != MPI_ERR_IN_STATUS) return realRc;
  std::vector<int> errs(n, MPI_SUCCESS);
  for (int i = 0; i < n; ++i) {
    if (s.ops[i]) {
      if (s.ops[i]->active()) errs[i] = complete(&rs[i], s.ops[i], at(sts, i));
      else base::setEmptyStatus(at(sts, i));
    } else {
      rs[i] = s.real[i];
      if (sts != MPI_STATUSES_IGNORE) sts[i] = realSt[i];
      errs[i] = realError(realRc, realSt[i]);
    }
  }
  return mergeErrors(errs, sts);
}

}  // namespace

// Each call hands a null pointer or a negative count to the real MPI, which reports it.
int wait(MPI_Request* r, MPI_Status* st) {
  if (!r) return PMPI_Wait(r, st);
  base::Op* op = handles::find(*r);
  if (!op) {
    beforeBlocking();
    return mustPoll() ? pollReal(r, st) : PMPI_Wait(r, st);
  }
  if (!op->active()) {
    base::setEmptyStatus(st);
    return MPI_SUCCESS;
  }
  waitFor(*op);
  return completeOne(r, op, st);
}

int test(MPI_Request* r, int* flag, MPI_Status* st) {
  if (!r || !flag) return PMPI_Test(r, flag, st);
  base::Op* op = handles::find(*r);
  progressAll();
  if (!op) return PMPI_Test(r, flag, st);
  if (!op->active()) {
    *flag = 1;
    base::setEmptyStatus(st);
    return MPI_SUCCESS;
  }
  *flag = op->poll() ? 1 : 0;
  if (!*flag) return MPI_SUCCESS;
  return completeOne(r, op, st);
}

int waitall(int n, MPI_Request rs[], MPI_Status sts[]) {
  if (n < 0 || (n > 0 && !rs)) return PMPI_Waitall(n, rs, sts);
  if (handles::none() && !mustPoll()) {
    beforeBlocking();
    return PMPI_Waitall(n, rs, sts);
  }
  Split s(n, rs);
  if (!s.anyOurs && !mustPoll()) {
    beforeBlocking();
    return PMPI_Waitall(n, rs, sts);
  }
  std::vector<MPI_Status> realSt(n);
  int realRc = MPI_SUCCESS;
  Backoff b;
  for (bool realDone = false;;) {
    progressAll();
    bool oursDone = true;
    for (int i = 0; i < n; ++i)
      if (s.activeOurs(i) && !s.ops[i]->poll()) oursDone = false;
    if (oursDone && !realDone && !mustPoll()) {
      beforeBlocking();
      realRc = PMPI_Waitall(n, s.real.data(), realSt.data());
      break;
    }
    if (!realDone) {
      int f = 0;
      realRc = PMPI_Testall(n, s.real.data(), &f, realSt.data());
      realDone = f != 0;
    }
    if (oursDone && realDone) break;
    b.pause();
  }
  return finishAll(n, rs, sts, s, realRc, realSt);
}

int testall(int n, MPI_Request rs[], int* flag, MPI_Status sts[]) {
  if (n < 0 || (n > 0 && !rs) || !flag) return PMPI_Testall(n, rs, flag, sts);
  progressAll();
  if (handles::none()) return PMPI_Testall(n, rs, flag, sts);
  Split s(n, rs);
  if (!s.anyOurs) return PMPI_Testall(n, rs, flag, sts);
  *flag = 0;
  for (int i = 0; i < n; ++i)
    if (s.activeOurs(i) && !s.ops[i]->poll()) return MPI_SUCCESS;
  std::vector<MPI_Status> realSt(n);
  int f = 0;
  int realRc = PMPI_Testall(n, s.real.data(), &f, realSt.data());
  if (!f) return realRc == MPI_ERR_IN_STATUS ? MPI_SUCCESS : realRc;
  *flag = 1;
  return finishAll(n, rs, sts, s, realRc, realSt);
}

namespace {

// One pass of Waitany/Testany. Returns true when a request completed (index set) or when no
// request is active (index = MPI_UNDEFINED).
bool anyPass(int n, MPI_Request rs[], Split& s, int* index, MPI_Status* st, int* rc) {
  static thread_local unsigned rotor = 0;
  progressAll();
  bool oursActive = false;
  for (int k = 0; k < n; ++k) {
    int i = static_cast<int>((rotor + k) % n);
    if (!s.activeOurs(i)) continue;
    oursActive = true;
    if (s.ops[i]->poll()) {
      ++rotor;
      *index = i;
      *rc = complete(&rs[i], s.ops[i], st);
      return true;
    }
  }
  int idx = MPI_UNDEFINED, f = 0;
  *rc = PMPI_Testany(n, s.real.data(), &idx, &f, st);
  if (f && idx != MPI_UNDEFINED) {
    rs[idx] = s.real[idx];
    *index = idx;
    return true;
  }
  if (*rc != MPI_SUCCESS) return true;
  if (f && !oursActive) {
    *index = MPI_UNDEFINED;
    base::setEmptyStatus(st);
    return true;
  }
  return false;
}

// One pass of Waitsome/Testsome; *outcount is MPI_UNDEFINED when no request is active.
int somePass(int n, MPI_Request rs[], Split& s, int* outcount, int indices[], MPI_Status sts[]) {
  progressAll();
  int cnt = 0;
  bool oursActive = false;
  std::vector<int> errs;
  for (int i = 0; i < n; ++i) {
    if (!s.activeOurs(i)) continue;
    oursActive = true;
    if (s.ops[i]->poll()) {
      indices[cnt] = i;
      errs.push_back(complete(&rs[i], s.ops[i], at(sts, cnt)));
      ++cnt;
    }
  }
  std::vector<int> ridx(n);
  std::vector<MPI_Status> rst(n);
  int rcount = 0;
  int rc = PMPI_Testsome(n, s.real.data(), &rcount, ridx.data(), rst.data());
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) return rc;
  if (rcount != MPI_UNDEFINED) {
    for (int j = 0; j < rcount; ++j) {
      int i = ridx[j];
      rs[i] = s.real[i];
      indices[cnt] = i;
      if (sts != MPI_STATUSES_IGNORE) sts[cnt] = rst[j];
      errs.push_back(realError(rc, rst[j]));
      ++cnt;
    }
  }
  *outcount = cnt > 0 ? cnt : (rcount == MPI_UNDEFINED && !oursActive ? MPI_UNDEFINED : 0);
  return mergeErrors(errs, sts);
}

}  // namespace

int waitany(int n, MPI_Request rs[], int* index, MPI_Status* st) {
  if (n < 0 || (n > 0 && !rs) || !index) return PMPI_Waitany(n, rs, index, st);
  if (handles::none() && !mustPoll()) {
    beforeBlocking();
    return PMPI_Waitany(n, rs, index, st);
  }
  Split s(n, rs);
  bool anyActive = false;
  for (int i = 0; i < n; ++i) anyActive = anyActive || s.activeOurs(i);
  if (!anyActive && !mustPoll()) {
    beforeBlocking();
    int rc = PMPI_Waitany(n, s.real.data(), index, st);
    if (*index != MPI_UNDEFINED) rs[*index] = s.real[*index];
    return rc;
  }
  int rc = MPI_SUCCESS;
  Backoff b;
  while (!anyPass(n, rs, s, index, st, &rc)) b.pause();
  return rc;
}

int testany(int n, MPI_Request rs[], int* index, int* flag, MPI_Status* st) {
  if (n < 0 || (n > 0 && !rs) || !index || !flag) return PMPI_Testany(n, rs, index, flag, st);
  if (handles::none()) {
    progressAll();
    return PMPI_Testany(n, rs, index, flag, st);
  }
  Split s(n, rs);
  int rc = MPI_SUCCESS;
  *flag = anyPass(n, rs, s, index, st, &rc) ? 1 : 0;
  if (!*flag) *index = MPI_UNDEFINED;
  return rc;
}

int waitsome(int n, MPI_Request rs[], int* outcount, int indices[], MPI_Status sts[]) {
  if (n < 0 || (n > 0 && (!rs || !indices)) || !outcount) return PMPI_Waitsome(n, rs, outcount, indices, sts);
  if (handles::none() && !mustPoll()) {
    beforeBlocking();
    return PMPI_Waitsome(n, rs, outcount, indices, sts);
  }
  Split s(n, rs);
  Backoff b;
  for (;;) {
    int rc = somePass(n, rs, s, outcount, indices, sts);
    if (rc != MPI_SUCCESS || *outcount != 0) return rc;
    b.pause();
  }
}

int testsome(int n, MPI_Request rs[], int* outcount, int indices[], MPI_Status sts[]) {
  if (n < 0 || (n > 0 && (!rs || !indices)) || !outcount) return PMPI_Testsome(n, rs, outcount, indices, sts);
  if (handles::none()) {
    progressAll();
    return PMPI_Testsome(n, rs, outcount, indices, sts);
  }
  Split s(n, rs);
  return somePass(n, rs, s, outcount, indices, sts);
}

int requestGetStatus(MPI_Request r, int* flag, MPI_Status* st) {
  if (!flag) return PMPI_Request_get_status(r, flag, st);
  base::Op* op = handles::find(r);
  progressAll();
  if (!op) return PMPI_Request_get_status(r, flag, st);
  if (!op->active()) {
    *flag = 1;
    base::setEmptyStatus(st);
    return MPI_SUCCESS;
  }
  *flag = op->poll() ? 1 : 0;
  if (*flag) copyStatus(st, op->status);
  return MPI_SUCCESS;
}

int requestFree(MPI_Request* r) {
  if (!r) return PMPI_Request_free(r);
  base::Op* op = handles::find(*r);
  if (!op) return PMPI_Request_free(r);
  bool finished = !op->active() || op->poll();
  if (finished) (void)handles::take(*r);
  else handles::detach(*r);
  *r = MPI_REQUEST_NULL;
  return MPI_SUCCESS;
}

int cancel(MPI_Request* r) {
  if (!r) return PMPI_Cancel(r);
  base::Op* op = handles::find(*r);
  if (!op) return PMPI_Cancel(r);
  return op->cancel();
}

}  // namespace cgdr::engine
