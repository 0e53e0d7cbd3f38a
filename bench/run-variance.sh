#!/usr/bin/env bash
# Whole runs fast or slow: repeats the same native bibw run (cgdr) and a bare copy of the same
# sizes (cgdr-peer-copy-bench), alternated, with the GPU's clocks sampled every 20 ms
# (rv-smi.csv, run windows in rv-marks.log), then cgdr-copy-drift (bench/copy_drift.cc: six
# buffer pairs timed in one process) in RV_DRIFT processes, to tell the machine's state from cgdr's.
#   OUT=DIR [RV_RUNS=10] [RV_CORES="2,3 10,11" (default 2,3)] [RV_RANGE=65536:2097152] [RV_DRIFT=6] bash bench/run-variance.sh
# after `SUITE_STEPS=build bash bench/gpu-suite.sh` (uses build-gpu). Commas in RV_CORES become
# underscores in the log names.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build-gpu out=${OUT:-/tmp/runvar}
. "$top/bench/gpu-env.sh"
export LD_LIBRARY_PATH="$top/.deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ lscpu; numactl -H 2>/dev/null; nvidia-smi topo -m; nvidia-smi -q -d PERFORMANCE,CLOCK; } > "$out/rv-env.log" 2>&1
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader,nounits -lms 20 > "$out/rv-smi.csv" 2>&1 &
smi=$!
rm -f "$out"/rv-marks.log "$out"/rv-bibw-*.log "$out"/rv-floor-*.log
mark() { echo "$(date +'%Y/%m/%d %H:%M:%S.%3N') $*" >> "$out/rv-marks.log"; }
range=${RV_RANGE:-65536:2097152}
for r in $(seq 1 "${RV_RUNS:-10}"); do
  for cores in ${RV_CORES:-2,3}; do
    mark start bibw $r $cores
    timeout 60 mpirun --cpu-set "$cores" --bind-to core -np 2 -x LD_PRELOAD="$lib" "$b" bibw D D -m "$range" \
      -i 200:40 -x 20:4 -W 16 > "$out/rv-bibw-$r-${cores//,/_}.log" 2>&1
    mark end bibw $r $cores
  done
  mark start floor $r
  timeout 60 "$build/bench/cgdr-peer-copy-bench" "${floorargs[@]}" -m "$range" -i 200 > "$out/rv-floor-$r.log" 2>&1
  mark end floor $r
done
kill $smi
for i in $(seq 1 "${RV_DRIFT:-6}"); do echo "process $i"; "$build/bench/cgdr-copy-drift"; done > "$out/rv-drift.log" 2>&1
