#!/usr/bin/env bash
# The GPU machine's one-call suite (nvidia-h200-x2): builds cgdr, runs the GPU tests and the
# benchmarks, and leaves logs under $OUT (suite.tgz with every log, summary.txt).
#   SUITE_STEPS="env build tests bench osu" bench/gpu-suite.sh
# Optional: OMB_DIR=<OSU micro-benchmarks built with CUDA> to run them against cgdr unchanged.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/cgdr-suite-out}
steps=${SUITE_STEPS:-env build tests bench osu}
logs=$(mktemp -d /tmp/cgdr-suite.XXXXXX)/logs
mkdir -p "$OUT" "$logs"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
build=$top/build-gpu
lib=$build/src/libcgdr.so
summary=$OUT/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
has() { [[ " $steps " == *" $1 "* ]]; }
mpirun2() { timeout "${STEP_TIMEOUT:-120}" mpirun --bind-to core --map-by core -np 2 "$@"; }
withcgdr() { echo -x "LD_PRELOAD=$lib"; }

if has env; then
  {
    date -u; uname -a; nvidia-smi -L; nvidia-smi topo -m; mpirun --version | head -1
    cmake --version | head -1; gcc --version | head -1; nvcc --version | tail -1
    ls /usr/lib/x86_64-linux-gnu | grep -E "gtest|benchmark|hwloc|ucm|ucp" || true
    ucx_info -v 2>/dev/null | head -3 || true
  } > "$logs/env.log" 2>&1
  say "env: $(nvidia-smi -L 2>/dev/null | wc -l) GPUs; $(mpirun --version 2>/dev/null | head -1)"
fi

if has build; then
  prefix=()
  [ -d "$top/.deps" ] && prefix=(-DCMAKE_PREFIX_PATH="$top/.deps")
  gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
  if cmake -S "$top" -B "$build" "${gen[@]}" "${prefix[@]}" -DCGDR_MPI=openmpi \
       -DMPI_C_COMPILER="$(command -v mpicc)" > "$logs/build.log" 2>&1 &&
     cmake --build "$build" -j"$(nproc)" >> "$logs/build.log" 2>&1; then
    say "build: ok"
  else
    say "build: FAILED (see build.log)"; tail -30 "$logs/build.log"
  fi
fi
export LD_LIBRARY_PATH="$top/.deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if has tests; then
  (cd "$build" && timeout "${GPU_TESTS_TIMEOUT:-300}" ctest -L gpu -j2 --timeout 240 --output-on-failure) > "$logs/gpu-tests.log" 2>&1
  say "gpu tests: $(grep -E 'tests passed' "$logs/gpu-tests.log" || echo 'no result')"
  grep -E "Failed|\*\*\*|FAIL" "$logs/gpu-tests.log" | head -20 | tee -a "$summary"
  (cd "$build" && timeout "${HOST_TESTS_TIMEOUT:-150}" ctest -L "unit|mpi" -j8 --timeout 120 --output-on-failure) > "$logs/host-tests.log" 2>&1
  say "host tests on the GPU machine: $(grep -E 'tests passed' "$logs/host-tests.log" || echo 'no result')"
fi

if has bench; then
  b=$build/tools/cgdr-bench/cgdr-bench
  if [ -x "$build/bench/cgdr-classify-bench" ]; then
    "$build/bench/cgdr-classify-bench" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true \
      > "$logs/classify.log" 2>&1
    say "classification (median):"; grep median "$logs/classify.log" | tee -a "$summary"
  fi
  for t in latency bw; do
    mpirun2 $(withcgdr) "$b" $t D D -m 0:4M --json "$logs/$t-DD-cgdr.json" > "$logs/$t-DD-cgdr.log" 2>&1
    mpirun2 $(withcgdr) "$b" $t H H -m 0:4M --json "$logs/$t-HH-cgdr.json" > "$logs/$t-HH-cgdr.log" 2>&1
    mpirun2 "$b" $t H H -m 0:4M --json "$logs/$t-HH-plain.json" > "$logs/$t-HH-plain.log" 2>&1
  done
  mpirun2 $(withcgdr) "$b" bibw D D -m 0:4M > "$logs/bibw-DD-cgdr.log" 2>&1
  for t in allreduce bcast; do
    mpirun2 $(withcgdr) "$b" $t -d cuda -m 4:1M --json "$logs/$t-DD-cgdr.json" > "$logs/$t-DD-cgdr.log" 2>&1
    mpirun2 "$b" $t -d host -m 4:1M --json "$logs/$t-HH-plain.json" > "$logs/$t-HH-plain.log" 2>&1
  done
  mpirun2 $(withcgdr) "$b" latency M M -m 0:1M -c > "$logs/latency-MM-cgdr.log" 2>&1
  python3 "$top/bench/side-by-side.py" "$logs" >> "$summary" 2>&1 || true
fi

if has osu && [ -n "${OMB_DIR:-}" ] && [ -d "$OMB_DIR" ]; then
  pt=$OMB_DIR/c/mpi/pt2pt/standard
  [ -d "$pt" ] || pt=$OMB_DIR/c/mpi/pt2pt
  for t in osu_latency osu_bw; do
    mpirun2 $(withcgdr) "$pt/$t" -d cuda -m 0:4194304 D D > "$logs/$t-DD-cgdr.log" 2>&1
    mpirun2 "$pt/$t" -m 0:4194304 H H > "$logs/$t-HH-plain.log" 2>&1
    say "$t D D through cgdr (last lines):"; tail -4 "$logs/$t-DD-cgdr.log" | tee -a "$summary"
  done
  co=$OMB_DIR/c/mpi/collective/blocking
  for t in osu_allreduce osu_bcast; do
    mpirun2 $(withcgdr) "$co/$t" -d cuda -m 4:1048576 > "$logs/$t-cuda-cgdr.log" 2>&1
    say "$t -d cuda through cgdr: exit $? (last lines):"; tail -3 "$logs/$t-cuda-cgdr.log" | tee -a "$summary"
  done
  mpirun2 "$pt/osu_latency" -d cuda -m 0:64 D D > "$logs/osu_latency-DD-plain.log" 2>&1
  say "osu_latency D D on the plain MPI: exit $? ($(grep -ciE 'segmentation|signal' "$logs/osu_latency-DD-plain.log") crash lines)"
fi

tar czf "$OUT/suite.tgz" -C "$(dirname "$logs")" logs
echo "===== summary"; cat "$summary"
