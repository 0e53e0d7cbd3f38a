#!/usr/bin/env bash
# The workload tracer switches the switch points of real traffic, phase by phase (trace_phases.cc):
# 100 blocking calls, then one large message of 2M+3 bytes; 2000 non-blocking, one of 4M+5; 600
# blocking, one of 8M+7; 600 non-blocking, one of 16M+9. Judged over a window of 256 calls
# (CGDR_TRACE_WINDOW) each large message follows its phase's pattern; counted since the start (window
# 0) the 2000 non-blocking calls keep the traffic bandwidth-bound through the 600 blocking ones.
#   host: host messages above CGDR_SHM_CMA_MAX_BW (1M) are copied once (shm-cma) where the receiver's
#     traffic with the sender is latency-bound, through the host pipeline where it is bandwidth-bound.
#   gpu: device messages between two processes on one GPU in buffers neither can map (pool memory)
#     take the cuMem ring from CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU (set to 64M: latency-bound, host
#     staging) or _BW (set to 1M: bandwidth-bound, the ring).
#   trace_phases.sh RUN_MPI MPI LIBCGDR TRACE_PHASES host|gpu
set -u
run=$1 mpi=$2 lib=$3 prog=$4 mode=$5
name=mpi.trace_phases; [ "$mode" = gpu ] && name=gpu.trace_phases
failures=0
. "$(dirname "$0")/stats_classes.sh"
. "$(dirname "$0")/gpus.sh"
fail() { echo "FAIL $name: $*"; failures=$((failures + 1)); }

if [ "$mode" = gpu ]; then
  [ "$(visible_gpus)" -ge 1 ] || { echo "SKIP $name: no GPU (GPU test)"; exit 77; }
  # One GPU, away from MPS; pool memory stays the runtime's (cgdr's heap would make it exportable).
  vars="CUDA_VISIBLE_DEVICES=0 CUDA_MPS_PIPE_DIRECTORY=/nonexistent/cgdr-no-mps CGDR_CUDA_MALLOC_ASYNC=off
        CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU=64M CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU_BW=1M"
  kinds=AA lat=host-pipeline bw=cuda-vmm-stage
else
  vars="CGDR_SHM_CMA_MAX_BW=1M" kinds=HH lat=shm-cma bw=host-pipeline
fi

# check LABEL WINDOW LO=CHANNEL...
check() {
  local label=$1 window=$2 out rc
  shift 2
  # shellcheck disable=SC2086
  out=$(env CGDR_STATS=1 CGDR_TRACE_WINDOW="$window" CGDR_TRACE_MIN=64 CGDR_TRACE_THRESHOLD=0.5 $vars \
        "$run" 2 cgdr "$mpi" "$lib" "$prog" --kinds "$kinds" 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q "^PASS trace_phases" <<<"$out"; then
    fail "$label: exit $rc: $(grep -E 'FAIL|rror' <<<"$out" | head -3)"
    return
  fi
  # Host single copies need process_vm_readv between the ranks (ptrace rules, seccomp of a container).
  if [ "$mode" = host ] && [ "$(stats_class "$out" 2097152)" = host-pipeline ] && ! grep -q "shm-cma" <<<"$out"; then
    echo "SKIP $name: no host message took shm-cma (process_vm_readv not permitted here?)"
    exit 77
  fi
  stats_expect "$out" "$label" "$@"
}

check "$kinds, window of 256 calls" 256 2097152=$lat 4194304=$bw 8388608=$lat 16777216=$bw
check "$kinds, counts since the start" 0 2097152=$lat 4194304=$bw 8388608=$bw 16777216=$bw
[ $failures -eq 0 ] && echo "PASS $name" || echo "FAIL $name ($failures)"
[ $failures -eq 0 ]
