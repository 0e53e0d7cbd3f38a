#!/usr/bin/env bash
# What pods can share: no shared memory with a private /dev/shm and no shared directory; shared
# memory again through a shared volume even with private IPC namespaces; PID visibility (the
# legacy-IPC condition) only with a shared PID namespace; another uid never attached; pods in the
# host's network namespace (--shared-net) are still separate containers to cgdr and to the real MPI.
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

# --shared-net: the host's network namespace, the pods' own PID and UTS namespaces (checked from
# /proc), the engine between them, and the real MPI between them (TCP over loopback) where a private
# /dev/shm keeps the engine out; data byte-exact both ways.
self_net=$(readlink /proc/self/ns/net) self_pid=$(readlink /proc/self/ns/pid)
out=$("$PODS" -n 2 --shared-net -- sh -c 'echo "ns $(hostname) $(readlink /proc/self/ns/net) $(readlink /proc/self/ns/pid)"' 2>&1)
nets=$(awk '/^ns pod[01] / {print $3}' <<<"$out" | sort -u) pids=$(awk '/^ns pod[01] / {print $4}' <<<"$out" | sort -u)
[ "$nets" = "$self_net" ] || fail "--shared-net: the pods are not in this network namespace ($self_net): $out"
[ "$(wc -l <<<"$pids")" = 2 ] && ! grep -qxF "$self_pid" <<<"$pids" ||
  fail "--shared-net: the pods do not have PID namespaces of their own: $out"
out=$("$PODS" -n 2 --shared-net -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=1 shm=1 seesPeer=0 seenByPeer=0" "shared network namespace"
out=$(CGDR_STATS=1 timeout 300 "$PODS" -n 2 --shared-net -- "$BIN/tests/mpi/p2p_basic" --max-size 300000 2>&1)
expect "$out" "^PASS" "p2p_basic, shared network namespace"
expect "$out" "stats: eager [1-9]" "p2p_basic, shared network namespace: the engine carried it"
out=$(CGDR_STATS=1 timeout 300 "$PODS" -n 2 --shared-net --private-shm -- "$BIN/tests/mpi/p2p_basic" --max-size 300000 2>&1)
expect "$out" "^PASS" "p2p_basic, shared network namespace, private /dev/shm (the real MPI over loopback)"
refuse "$out" "stats: eager [1-9]" "p2p_basic, shared network namespace, private /dev/shm: the engine carried it"

out=$("$PODS" -n 2 --private-shm --shared-dir "$vol" --uid "0;65534" -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=0 shm=0" "different uid"
expect "$out" "^pair 1 0 relation=2 engine=0 shm=0" "different uid, other side"
expect "$out" "shared memory no \(different uid \(65534\): never attached\)" "different uid reason"
[ -z "$(leftovers "$vol")" ] || fail "files left in the shared volume: $(leftovers "$vol")"
rm -rf "$vol"

# --lib: the ranks preload the given library (another build of cgdr, for an A/B of two versions),
# named by its full path; one that is not there is refused before anything starts.
alt=$(mktemp -d /tmp/cgdr-alt.XXXXXX)
cp "$BIN/src/libcgdr.so" "$alt/libcgdr-other.so"
out=$(cd "$alt" && "$PODS" -n 2 --lib libcgdr-other.so -- sh -c 'echo "preload $LD_PRELOAD"' 2>&1)
[ "$(grep -c "^preload $alt/libcgdr-other.so\$" <<<"$out")" = 2 ] || fail "--lib: both ranks preload it: $out"
out=$("$PODS" -n 2 --lib "$alt/none.so" -- true 2>&1); rc=$?
[ $rc = 2 ] || fail "--lib of a missing library: exit $rc, not 2"
expect "$out" "^cgdr-pods: no library $alt/none.so" "--lib of a missing library: the message"
rm -rf "$alt"
finish
