#!/usr/bin/env bash
# The main job (README, first command): installs the Debian packages, builds cgdr against Open MPI,
# and runs cgdr-bench between two simulated co-located containers (cgdr-pods: separate hostname,
# network, PID and mount namespaces, one rank each) -- with cgdr, and with the plain Open MPI for
# comparison. Device buffers where two GPUs exist (one per pod), host buffers otherwise.
# Results: printed, and as JSON under build/main-job/.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" || exit 1
"$top/scripts/build.sh" openmpi build || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
b=$top/build/tools/cgdr-bench/cgdr-bench
pods=$top/build/bin/cgdr-pods
out=$top/build/main-job
mkdir -p "$out"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ "${ngpu:-0}" -ge 2 ]; then
  kinds="D D"; podargs=(--gpus "0;1"); what="device buffers, one GPU per pod"
else
  kinds="H H"; podargs=(); what="host buffers (no 2 GPUs here)"
fi
echo "=== main job: cgdr-bench between two simulated co-located containers, $what"
rc=0
for t in latency bw; do
  for mode in cgdr plain; do
    extra=(); [ $mode = plain ] && extra=(--no-cgdr)
    [ $mode = plain ] && [ "$kinds" = "D D" ] && continue  # the plain Open MPI is not CUDA-aware
    echo "--- $t $kinds, $mode"
    "$pods" -n 2 "${podargs[@]+"${podargs[@]}"}" "${extra[@]+"${extra[@]}"}" -- \
      "$b" $t $kinds -m 0:4M --json "$out/$t-${kinds// /}-pods-$mode.json" || rc=1
  done
done
python3 "$top/bench/side-by-side.py" "$out" || true
[ $rc -eq 0 ] && echo "main job: done (results in $out)" || echo "main job: FAILED"
exit $rc
