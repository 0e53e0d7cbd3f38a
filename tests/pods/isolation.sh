#!/usr/bin/env bash
# What pods can share: no shared memory with a private /dev/shm and no shared directory; shared
# memory again through a shared volume even with private IPC namespaces; PID visibility (the
# legacy-IPC condition) only with a shared PID namespace; another uid never attached.
. "$(dirname "$0")/lib.sh"
vol=$(mktemp -d /tmp/cgdr-vol.XXXXXX)
chmod 1777 "$vol"

out=$("$PODS" -n 3 --private-shm -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=0 shm=0" "private /dev/shm"
expect "$out" "shared memory no \(not in this rank's locality list: the shared directory is not shared" "private /dev/shm reason"

out=$("$PODS" -n 2 -r 2 --private-shm -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=1 engine=1 shm=1" "same pod, private /dev/shm"
expect "$out" "^pair 0 2 relation=2 engine=0 shm=0" "other pod, private /dev/shm"

out=$("$PODS" -n 2 --private-ipc --shared-dir "$vol" -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=1 shm=1 seesPeer=0 seenByPeer=0" "private IPC, shared volume"

out=$("$PODS" -n 2 --shared-pid -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=1 shm=1 seesPeer=1 seenByPeer=1" "shared PID namespace"
out=$("$PODS" -n 2 -- "$INFO" --locality 2>&1)
expect "$out" "peer's PID visible no \(import: separate PID namespaces" "separate PID namespaces reason"

out=$("$PODS" -n 2 --private-shm --shared-dir "$vol" --uid "0;65534" -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=0 shm=0" "different uid"
expect "$out" "^pair 1 0 relation=2 engine=0 shm=0" "different uid, other side"
expect "$out" "shared memory no \(different uid \(65534\): never attached\)" "different uid reason"
[ -z "$(leftovers "$vol")" ] || fail "files left in the shared volume: $(leftovers "$vol")"
rm -rf "$vol"
finish
