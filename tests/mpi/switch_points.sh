#!/usr/bin/env bash
# The scheduler's GPU switch points, at the byte: messages one byte below a point and at it take
# the channels the table names, data checked by p2p_basic (every send mode but the buffered ones,
# whose data leaves as a host message; both directions).
# CGDR_STATS prints which channels carried each size class (powers of two), so each point checked
# here is one: the class below it must hold only the channel below, the class from it only the
# channel above. Points: on one GPU used in turns (the same-GPU stage minimum, per pattern),
# moved by a setting, the IPC threshold through its MVAPICH2-GDR alias (receives posted first
# too: they must not be copied into below it), and between two GPUs where the machine has two.
#   switch_points.sh RUN_MPI MPI LIBCGDR P2P_BASIC
set -u
run=$1 mpi=$2 lib=$3 p2p=$4
failures=0
command -v nvidia-smi > /dev/null && ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU') || ngpu=0
[ "${ngpu:-0}" -ge 1 ] || { echo "SKIP gpu.switch_points: no GPU (GPU test)"; exit 77; }
. "$(dirname "$0")/stats_classes.sh"
fail() { echo "FAIL gpu.switch_points: $*"; failures=$((failures + 1)); }

# check LABEL "VAR=VALUE ..." KINDS SIZES LO=CHANNEL...
check() {
  local label=$1 vars=$2 kinds=$3 sizes=$4 out rc
  shift 4
  # Pool memory stays the runtime's (cgdr's heap would make it exportable); away from MPS.
  # shellcheck disable=SC2086
  out=$(env CGDR_STATS=1 CGDR_CUDA_MALLOC_ASYNC=off CUDA_MPS_PIPE_DIRECTORY=/nonexistent/cgdr-no-mps $vars \
        "$run" 2 cgdr "$mpi" "$lib" "$p2p" --kinds "$kinds" --sizes "$sizes" --buffered no 2>&1)
  rc=$?
  if [ $rc -ne 0 ] || ! grep -q "^PASS p2p_basic" <<<"$out"; then
    fail "$label: exit $rc: $(grep -E 'FAIL|rror' <<<"$out" | head -3)"
    return
  fi
  stats_expect "$out" "$label" "$@"
}

same="CUDA_VISIBLE_DEVICES=0"
lat="CGDR_TRACE=0" bw="CGDR_TRACE_MIN=0 CGDR_TRACE_THRESHOLD=0"  # the tracer's pattern, fixed
# One GPU, two processes, buffers neither can map (pool memory): host staging below
# CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU (4M) / _BW (2M), the cuMem ring from there.
check "same GPU, latency-bound" "$same $lat" AA "128K-1,128K,4M-1,4M" \
  65536=host-pipeline 131072=host-pipeline 2097152=host-pipeline 4194304=cuda-vmm-stage
check "same GPU, bandwidth-bound" "$same $bw" AA "2M-1,2M" 1048576=host-pipeline 2097152=cuda-vmm-stage
check "same GPU, point moved by its setting" "$same $lat CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU=64K" AA "64K-1,64K" \
  32768=host-pipeline 65536=cuda-vmm-stage
# Below MV2_CUDA_IPC_THRESHOLD device messages are staged through host memory, from it pulled or
# pushed through legacy IPC; p2p_basic posts most receives before their message (advertised).
check "IPC threshold (MV2 alias), one GPU" "$same $lat MV2_CUDA_IPC_THRESHOLD=64K" DD "64K-1,64K" \
  32768=host-pipeline 65536=cuda-ipc
if [ "$ngpu" -ge 2 ]; then
  check "IPC threshold (MV2 alias), two GPUs" "$lat MV2_CUDA_IPC_THRESHOLD=64K" DD "64K-1,64K" \
    32768=host-pipeline 65536=cuda-ipc
  check "two GPUs, stage minimum" "$lat" AA "128K-1,128K" 65536=host-pipeline 131072=cuda-vmm-stage
  check "two GPUs, stage minimum, bandwidth-bound" "$bw" AA "128K-1,128K" 65536=host-pipeline 131072=cuda-vmm-stage
else
  echo "note: one GPU: the points between two GPUs are checked on a machine with two"
fi
[ $failures -eq 0 ] && echo "PASS gpu.switch_points" || echo "FAIL gpu.switch_points ($failures)"
[ $failures -eq 0 ]
