#!/usr/bin/env bash
# cgdr-bench --nccl (the NCCL side of the GPU comparison).
#   bench_nccl.sh args RUN_MPI MPI LIBCGDR CGDR_BENCH   requests it must refuse, on any machine:
#       each exits 2 with a message naming the cause (host buffers, a collective, no such library,
#       a library that is not NCCL, --nccl-blocking without --nccl)
#   bench_nccl.sh gpu  RUN_MPI MPI LIBCGDR CGDR_BENCH   latency, bw and bibw through NCCL between
#       two ranks with every byte checked (-c), D and V buffers, with cgdr preloaded (NCCL and cgdr
#       in one process, as a PyTorch job under a cgdr-preloaded MPI) and without, and D D with each
#       call synchronized; skipped without two GPUs or an NCCL library (bench/find-nccl.sh)
set -u
what=$1 run=$2 mpi=$3 lib=$4 bench=$5
top=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL bench_nccl $what: $*"; exit 1; }

if [ "$what" = args ]; then
  check() {  # EXPECTED-MESSAGE-REGEX ARGS...
    local want=$1 out rc
    shift
    out=$("$run" 2 plain "$mpi" "$lib" "$bench" "$@" 2>&1)
    rc=$?
    [ $rc -eq 2 ] || fail "'$*': exit $rc, not 2: $(tail -3 <<<"$out")"
    grep -qE "^cgdr-bench --nccl(-blocking)?: $want" <<<"$out" || fail "'$*': no message '$want': $(head -3 <<<"$out")"
    echo "refused as it must: $*"
  }
  check "NCCL moves GPU memory only" latency H D --nccl libnccl.so.2
  check "NCCL moves GPU memory only" bw D H --nccl libnccl.so.2
  check "only latency, bw and bibw run through NCCL, not 'allreduce'" allreduce -d cuda --nccl libnccl.so.2
  check "cannot load NCCL from '/nonexistent/libnccl.so.2': .*No such file" latency D D --nccl /nonexistent/libnccl.so.2
  check "'libc.so.6' is not a usable NCCL \(no symbol ncclGetVersion" bibw D D --nccl libc.so.6
  check "needs --nccl LIB" latency D D --nccl-blocking
  echo "PASS bench_nccl args"
  exit 0
fi

. "$top/tests/mpi/gpus.sh"
ngpu=$(visible_gpus)
[ "$ngpu" -gt 0 ] || { echo "SKIP bench_nccl gpu: no GPU"; exit 77; }
# NCCL refuses two ranks on one GPU (ncclInvalidUsage, "Duplicate GPU detected").
[ "$ngpu" -ge 2 ] || { echo "SKIP bench_nccl gpu: NCCL needs one GPU per rank, $ngpu visible"; exit 77; }
nccl=$("$top/bench/find-nccl.sh") || { echo "SKIP bench_nccl gpu: no NCCL library (bench/find-nccl.sh found none)"; exit 77; }
echo "NCCL: $nccl"
# MODE KINDS [--nccl-blocking]: the three tests through NCCL, 1 B .. 4 MiB, each size checked
runs() {
  local mode=$1 k=$2 extra=${3:-} t out rc n
  for t in latency bw bibw; do
    out=$("$run" 2 "$mode" "$mpi" "$lib" "$bench" $t $k -m 1:4194304 -i 30:10 -x 3:2 -W 8 -c --nccl "$nccl" $extra 2>&1)
    rc=$?
    [ $rc -eq 0 ] || fail "$mode $t $k $extra: exit $rc: $(grep -vE '^\s*$' <<<"$out" | tail -4)"
    grep -q "through NCCL [0-9]" <<<"$out" || fail "$mode $t $k $extra: the header does not name NCCL"
    [ -z "$extra" ] || grep -q "through NCCL [0-9.]*, each call synchronized" <<<"$out" ||
      fail "$mode $t $k $extra: the header does not say each call was synchronized"
    n=$(grep -cE '^[0-9]+ +[0-9.]+ +Pass$' <<<"$out")
    [ "$n" -eq 23 ] || fail "$mode $t $k $extra: $n sizes validated, not 23 (1 B .. 4 MiB): $(grep -E 'FAIL' <<<"$out" | head -2)"
    echo "$mode $t $k $extra: $(grep -m1 'through NCCL' <<<"$out" | sed 's/.*through //'), 23 sizes byte-exact"
  done
}
for mode in cgdr plain; do
  for k in "D D" "V V" "D V"; do runs "$mode" "$k"; done
done
runs cgdr "D D" --nccl-blocking
echo "PASS bench_nccl gpu"
