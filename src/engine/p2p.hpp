// Point-to-point entry points of the engine: each message goes to the real MPI unchanged when it
// can, and otherwise to the channel that serves it (staged through pinned memory for now).
#pragma once
#include <memory>

#include "base/msg.hpp"
#include "base/op.hpp"
#include "base/status.hpp"

namespace cgdr::engine {

int send(const base::SendArgs& a);
int isend(const base::SendArgs& a, MPI_Request* r);
int recv(const base::RecvArgs& a, MPI_Status* st);
int irecv(const base::RecvArgs& a, MPI_Request* r);
// Matched receives; `a.peer`/`a.tag` are unused.
int mrecv(const base::RecvArgs& a, MPI_Message* m, MPI_Status* st);
int imrecv(const base::RecvArgs& a, MPI_Message* m, MPI_Request* r);
int sendrecv(const base::SendArgs& s, const base::RecvArgs& r, MPI_Status* st);
int sendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r, MPI_Status* st);
#if MPI_VERSION >= 4
// MPI_Isendrecv and MPI_Isendrecv_replace (MPI-4): one request for both halves.
int isendrecv(const base::SendArgs& s, const base::RecvArgs& r, MPI_Request* q);
int isendrecvReplace(const base::SendArgs& s, const base::RecvArgs& r, MPI_Request* q);
#endif

int probe(int src, int tag, MPI_Comm c, MPI_Status* st);
int iprobe(int src, int tag, MPI_Comm c, int* flag, MPI_Status* st);
int mprobe(int src, int tag, MPI_Comm c, MPI_Message* m, MPI_Status* st);
int improbe(int src, int tag, MPI_Comm c, int* flag, MPI_Message* m, MPI_Status* st);

// An operation for one send/receive without a user handle (persistent starts, sendrecv).
base::Result<std::unique_ptr<base::Op>> makeSend(const base::SendArgs& a);
base::Result<std::unique_ptr<base::Op>> makeRecv(const base::RecvArgs& a);
// A receive through the real MPI only (remote source), staged when the buffer is GPU memory.
base::Result<std::unique_ptr<base::Op>> makeRealRecv(const base::RecvArgs& a);

// Copies an operation's status to the caller's (MPI_STATUS_IGNORE allowed), leaving MPI_ERROR
// untouched as single-completion calls must.
void copyStatus(MPI_Status* dst, const MPI_Status& src);

}  // namespace cgdr::engine
