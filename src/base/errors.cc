#include "base/errors.hpp"

#include <cstring>

#include "base/log.hpp"

namespace cgdr::base {
namespace {

struct Entry {
  Errc errc;
  int mpiClass;
  const char* text;
};

const Entry kEntries[] = {
    {Errc::kInvalidBuffer, MPI_ERR_BUFFER,
     "cgdr: invalid buffer: neither host memory nor a live GPU allocation (freed or foreign "
     "device pointer?)"},
    {Errc::kBufferOverrun, MPI_ERR_BUFFER,
     "cgdr: invalid buffer: the count runs past the end of the GPU allocation holding it"},
    {Errc::kBufferHole, MPI_ERR_BUFFER,
     "cgdr: invalid buffer: the count runs into a hole nothing is mapped to in the GPU address range holding it"},
    {Errc::kCuda, MPI_ERR_OTHER, "cgdr: a CUDA operation on the buffer failed"},
    {Errc::kNoMemory, MPI_ERR_NO_MEM, "cgdr: out of staging or shared memory"},
    {Errc::kSystem, MPI_ERR_OTHER, "cgdr: a system call failed"},
    {Errc::kUnsupported, MPI_ERR_UNSUPPORTED_OPERATION,
     "cgdr: operation not supported: valid MPI that cgdr cannot serve (the cause is in cgdr's log)"},
    {Errc::kPeerLost, MPI_ERR_OTHER, "cgdr: a co-located peer process vanished"},
    {Errc::kProtocol, MPI_ERR_INTERN, "cgdr: malformed data from a peer"},
    {Errc::kArgument, MPI_ERR_ARG, "cgdr: invalid argument"},
    {Errc::kGpuReset, MPI_ERR_BUFFER,
     "cgdr: GPU buffer after cudaDeviceReset: the reset ended cgdr's GPU work in this process (reset a GPU only "
     "after the last MPI call that uses GPU memory)"},
    {Errc::kTruncate, MPI_ERR_TRUNCATE, nullptr},  // MPI's own code: programs compare with it
};

constexpr int kCount = sizeof(kEntries) / sizeof(kEntries[0]);
int gCodes[kCount];
bool gInit = false;

// Adds a code to the predefined class if the MPI then reports our text for it (Open MPI);
// otherwise (MPICH) to a new class of cgdr's own, so the message is not lost.
int makeCode(const Entry& e) {
  if (!e.text) return e.mpiClass;
  int code = 0;
  if (PMPI_Add_error_code(e.mpiClass, &code) == MPI_SUCCESS &&
      PMPI_Add_error_string(code, e.text) == MPI_SUCCESS) {
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (PMPI_Error_string(code, s, &len) == MPI_SUCCESS && std::strstr(s, "cgdr:")) return code;
  }
  int cls = 0;
  if (PMPI_Add_error_class(&cls) != MPI_SUCCESS || PMPI_Add_error_code(cls, &code) != MPI_SUCCESS)
    return e.mpiClass;
  PMPI_Add_error_string(cls, e.text);
  PMPI_Add_error_string(code, e.text);
  return code;
}

}  // namespace

void initErrors() {
  if (gInit) return;
  for (int i = 0; i < kCount; ++i) gCodes[i] = makeCode(kEntries[i]);
  gInit = true;
}

int errorCode(Errc e) {
  for (int i = 0; i < kCount; ++i)
    if (kEntries[i].errc == e) return gInit ? gCodes[i] : kEntries[i].mpiClass;
  return MPI_ERR_INTERN;
}

int raise(MPI_Comm comm, const Status& s) {
  int code = errorCode(s.code());
  CGDR_LOG(kError, kInit, "%s", s.message().c_str());
  PMPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
  return code;
}

int settleError(MPI_Comm comm, int error, bool raised, const Status& failure) {
  if (error == MPI_SUCCESS || raised) return error;
  if (failure.isOk()) return raise(comm, Status(Errc::kCuda, "operation failed"));
  return raise(comm, failure);
}

}  // namespace cgdr::base
