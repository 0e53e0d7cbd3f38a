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
timeout --kill-after=10 --signal=TERM "${CGDRTEST_TIMEOUT:-900}" "${cmd[@]}" "$@"
rc=$?
[ $rc -eq 124 ] || [ $rc -eq 137 ] && echo "run-mpi.sh: test killed after ${CGDRTEST_TIMEOUT:-900} s (hang?)" >&2
[ $rc -ne 0 ] && [ $rc -ne 77 ] && echo "run-mpi.sh: exit code $rc" >&2
exit $rc
