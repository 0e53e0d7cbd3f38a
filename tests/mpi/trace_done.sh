#!/usr/bin/env bash
# The GPU rendezvous trace of a D-D ping-pong of adverts (CGDR_TRACE_GPU=1, CGDR_STATS=1):
#   trace_done.sh RUN_MPI MPI LIBCGDR CGDR_BENCH
# Between two GPUs each rank copies its own sends into the peer's advertised receives: each tells
# its peer a copy is done and then advertises its next receive (done-advert), and sees the peer's
# notice and then sends (done-look): both steps on both ranks. Where the two ranks share one GPU
# (a machine of one GPU), the receiver that drives the pair makes every copy (sched/select.hpp,
# leaveToReceiver): one rank has only done-advert, the other only done-look; both must be there.
set -u
run=$1 mpi=$2 lib=$3 bench=$4
fail() { echo "FAIL trace_done: $*"; exit 1; }
. "$(dirname "$0")/gpus.sh"
ngpu=$(visible_gpus)
[ "$ngpu" -gt 0 ] || { echo "SKIP trace_done: no GPU"; exit 77; }
out=$(CGDR_TRACE_GPU=1 CGDR_STATS=1 "$run" 2 cgdr "$mpi" "$lib" "$bench" latency D D -m 1:65536 -i 50:10 -x 5:2 -c 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || fail "cgdr-bench exit $rc"
[ "$(grep -cE '^[0-9]+ +[0-9.]+ +Pass$' <<<"$out")" -eq 17 ] || fail "not every size 1 B .. 64 KiB validated"
adv='done-advert [0-9.]+ / [0-9.]+ us \([1-9][0-9]*\)'
look='done-look [0-9.]+ / [0-9.]+ us \([1-9][0-9]*\)'
traces=$(grep 'GPU rendezvous trace' <<<"$out")
[ "$(grep -c . <<<"$traces")" -eq 2 ] || fail "not one trace line per rank"
if [ "$ngpu" -ge 2 ]; then
  n=$(grep -E "$adv" <<<"$traces" | grep -cE "$look")
  [ "$n" -eq 2 ] || fail "two GPUs: $n of 2 ranks traced both done-advert and done-look"
else
  grep -qE "$adv" <<<"$traces" || fail "one GPU: no rank traced done-advert"
  grep -qE "$look" <<<"$traces" || fail "one GPU: no rank traced done-look"
fi
echo "PASS trace_done ($ngpu GPU(s) visible)"
