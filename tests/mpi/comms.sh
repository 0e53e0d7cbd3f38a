#!/usr/bin/env bash
# Which communicators cgdr's engine serves: p2p_comms gives each of its communicators messages of
# a size class of their own and prints "comm NAME: own size S"; CGDR_STATS=1 prints the channels
# that carried each size class (engine messages only). Every communicator made by a call cgdr
# intercepts must show its class; the one made by MPI_Comm_idup (left to the real MPI) must not.
#   comms.sh RUN_MPI MPI LIBCGDR P2P_COMMS NP
set -u
run=$1 mpi=$2 lib=$3 prog=$4 np=$5
failures=0
. "$(dirname "$0")/stats_classes.sh"
fail() { echo "FAIL mpi.comms_served: $*"; failures=$((failures + 1)); }

out=$(env CGDR_STATS=1 "$run" "$np" cgdr "$mpi" "$lib" "$prog" --rounds 3 2>&1)
rc=$?
if [ $rc -ne 0 ] || ! grep -q "^PASS p2p_comms" <<<"$out"; then
  fail "p2p_comms exited $rc: $(grep -E 'FAIL|rror' <<<"$out" | head -3)"
else
  names=$(grep -c "^comm [a-z_]*: own size [0-9]*$" <<<"$out")
  [ "$names" -ge 14 ] || fail "p2p_comms printed $names communicators, expected 14"
  while read -r name size; do
    lo=1
    while [ $((lo * 2)) -le "$size" ]; do lo=$((lo * 2)); done
    got=$(stats_class "$out" "$lo")
    case "$name" in
      idup) [ -z "$got" ] || fail "$name (the real MPI's): its $size B messages took cgdr's '$got'" ;;
      *) [ -n "$got" ] || fail "$name: its $size B messages did not take cgdr's engine (no stats for $lo..)" ;;
    esac
    echo "$name: $size B: ${got:-the real MPI}"
  done < <(sed -n 's/^comm \([a-z_]*\): own size \([0-9]*\)$/\1 \2/p' <<<"$out")
fi
[ $failures -eq 0 ] && echo "PASS mpi.comms_served" || echo "FAIL mpi.comms_served ($failures)"
[ $failures -eq 0 ]
