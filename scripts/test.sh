#!/usr/bin/env bash
# Runs every test: unit, multi-process (host memory, with and without cgdr) against Open MPI and
# MPICH, container tests, and the GPU tests (which skip with a message where no GPU exists); then
# the Open MPI set again under AddressSanitizer/UBSan, MPICH's under the same, Open MPI's (less the
# GPU and container suites) under ThreadSanitizer, and the host-only build's unit tests.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rc=0
# CI keeps only the end of the log: what failed is listed again there, stage by stage, with the
# names of the failed tests (ctest's LastTestsFailed.log of that build) and the last lines each
# printed (from ctest's LastTest.log).
failed=()
tails=$(mktemp)
trap 'rm -f "$tails"' EXIT
fail() {  # fail STAGE [BUILD_DIR]
  local names="" t=$top/${2:-.}/Testing/Temporary
  if [ -n "${2:-}" ] && [ -f "$t/LastTestsFailed.log" ]; then
    names=$(cut -d: -f2- "$t/LastTestsFailed.log" | tr '\n' ' ')
    for n in $names; do
      echo "--- $1: $n (its last lines)" >> "$tails"
      awk -v n="$n" '$0 ~ ("Testing: " n "$") { grab = 1; delete l; k = 0; next }
                     grab && /^<end of output>$/ { grab = 0; done = 1; next }
                     grab { l[k++] = $0 }
                     END { for (i = (k > 25 ? k - 25 : 0); i < k; i++) print l[i] }' \
        "$t/LastTest.log" >> "$tails" 2>/dev/null
    done
  fi
  failed+=("$1${names:+: $names}")
  rc=1
}
for mpi in openmpi mpich; do
  dir=build; [ "$mpi" = mpich ] && dir=build-mpich
  echo "=== build against $mpi"
  rm -f "$top/$dir/Testing/Temporary/LastTestsFailed.log"
  "$top/scripts/build.sh" "$mpi" "$dir" || { fail "build against $mpi"; continue; }
  labels="unit|mpi|gpu|pods"
  [ "$mpi" = mpich ] && labels="unit|mpi"   # GPU and container suites run against Open MPI
  echo "=== tests against $mpi ($labels)"
  (cd "$top/$dir" && ctest -L "$labels" --output-on-failure --timeout 900) ||
    fail "tests against $mpi" "$dir"
  if [ "$mpi" = openmpi ]; then
    skipped=$(cd "$top/$dir" && ctest -L gpu -N 2>/dev/null | grep -c "Test *#" || true)
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
      echo "NOTE: no GPU on this machine: the $skipped GPU tests above were skipped (they run on the GPU machine: bench/gpu-suite.sh)"
  fi
done
# The same tests (less MPICH) built with AddressSanitizer and UBSan: a stray write, a use after
# free or undefined behaviour in the engine fails its test instead of passing by luck.
echo "=== AddressSanitizer/UBSan build (Open MPI) and its tests (unit|mpi|gpu|pods)"
rm -f "$top/build-asan/Testing/Temporary/LastTestsFailed.log"
if "$top/scripts/build.sh" openmpi build-asan -DCGDR_SANITIZE=address,undefined; then
  (cd "$top/build-asan" && . "$top/scripts/asan-env.sh" &&
    ctest -L "unit|mpi|gpu|pods" --output-on-failure --timeout 900) ||
    fail "AddressSanitizer/UBSan tests" build-asan
else
  fail "AddressSanitizer/UBSan build"
fi
# MPICH's unit and multi-process tests under the same sanitizers: cgdr's paths over the other
# MPI (its datatypes, its request and status handling, its PMPI layer) get the same scrutiny.
echo "=== AddressSanitizer/UBSan build (MPICH) and its tests (unit|mpi)"
rm -f "$top/build-asan-mpich/Testing/Temporary/LastTestsFailed.log"
if "$top/scripts/build.sh" mpich build-asan-mpich -DCGDR_SANITIZE=address,undefined; then
  (cd "$top/build-asan-mpich" && . "$top/scripts/asan-env.sh" &&
    ctest -L "unit|mpi" --output-on-failure --timeout 900) ||
    fail "AddressSanitizer/UBSan tests against MPICH" build-asan-mpich
else
  fail "AddressSanitizer/UBSan build against MPICH"
fi
# The unit and multi-process tests built with ThreadSanitizer: a data race or lock-order
# inversion in cgdr's own code fails (Open MPI's own reports are counted, not judged).
echo "=== ThreadSanitizer build (Open MPI) and its tests (unit|mpi)"
rm -f "$top/build-tsan/Testing/Temporary/LastTestsFailed.log"
"$top/scripts/tsan.sh" build-tsan || fail "ThreadSanitizer build, tests or report check" build-tsan
# Where the CUDA toolkit is present the builds above use it: the host-only build (what a machine
# without CUDA gets) must still compile and pass its unit tests.
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "=== host-only build (CGDR_WITH_CUDA=OFF) and its unit tests"
  rm -f "$top/build-host/Testing/Temporary/LastTestsFailed.log"
  "$top/scripts/build.sh" openmpi build-host -DCGDR_WITH_CUDA=OFF &&
    (cd "$top/build-host" && ctest -L unit --output-on-failure --timeout 300) ||
    fail "host-only build or its unit tests" build-host
fi
[ -s "$tails" ] && cat "$tails"
for f in "${failed[@]}"; do echo "FAILED: $f"; done
[ $rc -eq 0 ] && echo "ALL TESTS PASSED" || echo "SOME TESTS FAILED"
exit $rc
