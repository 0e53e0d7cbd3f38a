#!/usr/bin/env bash
# The workload tracer switches the switch points of real traffic, phase by phase (trace_phases.cc):
# host messages above CGDR_SHM_CMA_MAX_BW (1M) are copied once (shm-cma) where the receiver's
# traffic with the sender is latency-bound and through the host pipeline where it is bandwidth-
# bound. Phases: 100 blocking messages, then one of 2M+3 bytes; 2000 non-blocking, one of 4M+5;
# 600 blocking, one of 8M+7; 600 non-blocking, one of 16M+9. Judged over a window of 256 calls
# (CGDR_TRACE_WINDOW) each large message follows its phase; counted since the start (window 0) the
# 2000 non-blocking calls keep the traffic bandwidth-bound through the 600 blocking ones.
#   trace_phases.sh RUN_MPI MPI LIBCGDR TRACE_PHASES
set -u
run=$1 mpi=$2 lib=$3 prog=$4
failures=0
. "$(dirname "$0")/stats_classes.sh"
fail() { echo "FAIL mpi.trace_phases: $*"; failures=$((failures + 1)); }

# check LABEL WINDOW LO=CHANNEL...
check() {
  local label=$1 window=$2 out rc
  shift 2
  out=$(env CGDR_STATS=1 CGDR_TRACE_WINDOW="$window" CGDR_TRACE_MIN=64 CGDR_TRACE_THRESHOLD=0.5 \
        CGDR_SHM_CMA_MAX_BW=1M "$run" 2 cgdr "$mpi" "$lib" "$prog" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q "^PASS trace_phases" <<<"$out"; then
    fail "$label: exit $rc: $(grep -E 'FAIL|rror' <<<"$out" | head -3)"
    return
  fi
  # Single copies need process_vm_readv between the ranks (ptrace rules, seccomp of a container).
  if [ "$(stats_class "$out" 2097152)" = host-pipeline ] && ! grep -q "shm-cma" <<<"$out"; then
    echo "SKIP mpi.trace_phases: no host message took shm-cma (process_vm_readv not permitted here?)"
    exit 77
  fi
  stats_expect "$out" "$label" "$@"
}

check "window of 256 calls" 256 2097152=shm-cma 4194304=host-pipeline 8388608=shm-cma 16777216=host-pipeline
check "counts since the start" 0 2097152=shm-cma 4194304=host-pipeline 8388608=host-pipeline \
  16777216=host-pipeline
[ $failures -eq 0 ] && echo "PASS mpi.trace_phases" || echo "FAIL mpi.trace_phases ($failures)"
[ $failures -eq 0 ]
