#!/usr/bin/env bash
# The multi-process tests across simulated containers: in container mode (cgdr's engine between
# the pods), with private /dev/shm (engine inside a pod, real MPI between pods: communicators mix
# both kinds of peers), in off mode (everything through the real MPI) and natively. Same results.
. "$(dirname "$0")/lib.sh"
T=$BIN/tests/mpi
run() {  # run LABEL PODS-ARGS... -- PROGRAM ARGS...
  local label=$1
  shift
  local out
  out=$(CGDR_STATS=1 timeout 300 "$PODS" "$@" 2>&1)
  if ! grep -q "^PASS" <<<"$out"; then
    fail "$label: $(grep -E 'FAIL|rror|killed' <<<"$out" | head -3)"
  fi
  echo "$out"
}
progs=("p2p_basic --max-size 300000" "p2p_order" "p2p_probe" "p2p_persistent" "p2p_completion" "p2p_errors"
       "p2p_datatypes" "coll_nonblocking --max-count 4095" "stress --seed 7 --rounds 12" "threads")
for p in "${progs[@]}"; do
  set -- $p
  name=$1
  shift
  out=$(run "$name in 2 pods" -n 2 -- "$T/$name" "$@")
  [ "$name" = p2p_basic ] && { grep -q "stats: eager [1-9]" <<<"$out" || fail "container mode: the engine carried nothing"; }
  run "$name in 2 pods x 2 ranks, private /dev/shm (mixed)" -n 2 -r 2 --private-shm -- "$T/$name" "$@" > /dev/null
  out=$(CGDR_LOCALITY=off run "$name in 2 pods, off mode" -n 2 -- "$T/$name" "$@")
  grep -q "stats:" <<<"$out" && fail "off mode: the engine ran"
done
run "progress, mixed" -n 2 -r 2 --private-shm -- "$T/progress" > /dev/null
run "progress, all co-located" -n 2 -r 2 -- "$T/progress" > /dev/null
out=$(run "flood" -n 2 -- "$T/flood")
peak=$(grep -o "peak unexpected eager bytes [0-9]*" <<<"$out" | awk '{print $NF}' | sort -n | tail -1)
[ -n "$peak" ] && [ "$peak" -le 1048576 ] || fail "unexpected eager memory not bounded by the credit: ${peak:-none}"
[ -z "$(leftovers /dev/shm)" ] || fail "files left in /dev/shm: $(leftovers /dev/shm)"
finish
