#!/usr/bin/env bash
# A co-located peer killed mid-transfer: the survivor fails with an MPI error (or the job is
# aborted), never hangs; nothing is left in the shared directory. With mpirun's recovery mode the
# survivor keeps running, so the failure must be found by cgdr itself (its peer liveness check).
. "$(dirname "$0")/lib.sh"
F=$BIN/tests/mpi/fault
for mode in "abort" "recovery"; do
  args=(-n 2)
  [ $mode = recovery ] && args+=(--mpirun-arg --enable-recovery)
  log=$(mktemp)
  timeout 120 "$PODS" "${args[@]}" -- "$F" > "$log" 2>&1 &
  pods=$!
  settle 20 starting "$log" 2 || fail "$mode: the ranks did not start: $(tail -3 "$log")"
  sleep 1  # mid-transfer
  victim=""
  for p in $(pgrep -f "$F"); do
    tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=0$' && victim=$p
  done
  [ -n "$victim" ] || fail "$mode: rank 0 not found"
  kill -KILL $victim
  start=$SECONDS
  wait $pods
  rc=$?
  took=$((SECONDS - start))
  [ $rc -eq 124 ] && fail "$mode: the job hung after a peer died"
  [ $took -lt 100 ] || fail "$mode: took $took s to end"
  if [ $mode = recovery ]; then
    grep -q "rank 1 detected a failure" "$log" || fail "recovery mode: rank 1 got no MPI error: $(tail -5 "$log")"
  fi
  settle 10 running "$F" || fail "$mode: a rank survives"
  settle 10 holds_files /dev/shm || fail "$mode: files left in /dev/shm: $(leftovers /dev/shm)"
  echo "$mode: ended after $took s (exit $rc); $(grep -o 'rank 1 detected.*' "$log" | head -1)"
  rm -f "$log"
done
finish
