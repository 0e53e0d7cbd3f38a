#!/usr/bin/env bash
# Runs one multi-process test: run-mpi.sh NP MODE MPI LIBCGDR PROGRAM [ARGS...]
#   MODE: plain (the real MPI alone) or cgdr (libcgdr.so preloaded into the ranks only)
#   MPI:  openmpi or mpich
set -u
np=$1 mode=$2 mpi=$3 lib=$4
shift 4
cmd=()
case "$mpi" in
  openmpi)
    cmd=(mpiexec.openmpi --allow-run-as-root --oversubscribe --bind-to none -np "$np")
    [ "$mode" = cgdr ] && cmd+=(-x "LD_PRELOAD=$lib" -x CGDRTEST_PRELOADED=1)
    # cgdr settings and the GPU selection of the test's environment reach every rank.
    for v in $(compgen -e | grep -E '^(CGDR_|MV2_|CUDA_VISIBLE_DEVICES$)'); do cmd+=(-x "$v"); done
    ;;
  mpich)
    cmd=(mpiexec.mpich -n "$np")
    [ "$mode" = cgdr ] && cmd+=(-genv LD_PRELOAD "$lib" -genv CGDRTEST_PRELOADED 1)
    ;;
  *) echo "run-mpi.sh: unknown MPI '$mpi'" >&2; exit 2 ;;
esac
# Under scripts/tsan.sh the ranks of the real MPI alone report to files of their own (a later
# log_path in TSAN_OPTIONS wins), so that a report there is known to come from a process
# without cgdr.
[ "$mode" = plain ] && [ -n "${CGDRTEST_TSAN_PLAIN_LOG:-}" ] &&
  export TSAN_OPTIONS="${TSAN_OPTIONS:-} log_path=$CGDRTEST_TSAN_PLAIN_LOG"
timeout --kill-after=10 --signal=TERM "${CGDRTEST_TIMEOUT:-900}" "${cmd[@]}" "$@"
rc=$?
[ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "run-mpi.sh: test killed after ${CGDRTEST_TIMEOUT:-900} s (hang?)" >&2
[ $rc -ne 0 ] && [ $rc -ne 77 ] && echo "run-mpi.sh: exit code $rc" >&2
exit $rc
