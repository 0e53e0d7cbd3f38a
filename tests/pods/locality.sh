#!/usr/bin/env bash
# Co-residence across simulated containers: found in container mode, not in hostname or off
# mode; ranks inside one pod share a namespace, ranks in different pods are co-located containers.
. "$(dirname "$0")/lib.sh"

out=$("$PODS" -n 2 -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=1 shm=1 seesPeer=0 seenByPeer=0" "container mode"
expect "$out" "^matrix 0:  S  C$" "container mode matrix"

out=$(CGDR_LOCALITY=hostname "$PODS" -n 2 -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=0 shm=1" "hostname mode"
expect "$out" "rank 0 -> 1: .*engine no \(hostnames differ" "hostname mode reason"

out=$(CGDR_LOCALITY=off "$PODS" -n 2 -- "$INFO" --locality 2>&1)
expect "$out" "^pair 1 0 relation=2 engine=0" "off mode"
expect "$out" "engine no \(CGDR_LOCALITY=off\)" "off mode reason"

out=$("$PODS" -n 4 -r 2 -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=1 engine=1 shm=1 seesPeer=1 seenByPeer=1" "same pod"
expect "$out" "^pair 0 2 relation=2 engine=1 shm=1 seesPeer=0" "pods 0 and 1"
expect "$out" "^pair 7 0 relation=2 engine=1" "pods 3 and 0"
expect "$out" "^matrix 3:  C  C  N  S  C  C  C  C$" "8-rank matrix"

out=$("$PODS" -n 2 --native -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=1 engine=1 shm=1 seesPeer=1" "native run"
finish
