// Every MPI entry point of cgdr starts with CGDR_ENTER: calls made while cgdr is not set up, and
// calls the real MPI makes into MPI_* from inside a cgdr call on this thread (ROMIO, tools,
// error handlers), go straight to PMPI_*.
#pragma once

#define CGDR_API extern "C" __attribute__((visibility("default")))

namespace cgdr::interpose {

extern thread_local bool tInside __attribute__((tls_model("initial-exec")));
// True between cgdr's set-up in MPI_Init and its tear-down in MPI_Finalize.
bool ready();

class Guard {
 public:
  Guard() : was_(tInside) { tInside = true; }
  ~Guard() { tInside = was_; }
  Guard(const Guard&) = delete;
  Guard& operator=(const Guard&) = delete;

 private:
  bool was_;
};

}  // namespace cgdr::interpose

#define CGDR_ENTER(passthrough)                                                  \
  if (::cgdr::interpose::tInside || !::cgdr::interpose::ready()) return passthrough; \
  ::cgdr::interpose::Guard cgdrGuard_
