#!/usr/bin/env bash
# cgdr-pods-net, the pods' network plumbing over rtnetlink: a bridge is created, listed and
# deleted; bad input fails with a message and creates nothing; a veth reaches a pod's namespace.
. "$(dirname "$0")/lib.sh"
NET=$BIN/bin/cgdr-pods-net
br=cgdrbr$((900000 + $$ % 99999))
out=$("$NET" bridge "$br" 10.251.7.1/24 2>&1) || fail "bridge: $out"
"$NET" bridges cgdrbr | grep -qx "$br" || fail "the new bridge is not listed"
out=$("$NET" bridge "$br" 10.251.7.1/24 2>&1) && fail "a second bridge of the same name was accepted"
expect "$out" "create bridge $br: File exists" "duplicate bridge: the message names the cause"
# A pod-like namespace gets eth0 with the address.
unshare --net sleep 30 &
pod=$!
# The child exists before it has left this namespace: wait until it has (a fixed pause raced).
here_net() { [ "$(readlink "/proc/$pod/ns/net" 2>/dev/null)" = "$(readlink /proc/self/ns/net)" ]; }
settle 10 here_net || fail "unshare --net did not give the pod a namespace of its own"
out=$("$NET" veth "cgvt$$" "$br" "$pod" 10.251.7.10/24 2>&1) || fail "veth: $out"
# /proc/self/net follows the network namespace nsenter entered (sysfs would not).
nsenter -t "$pod" -n cat /proc/self/net/dev | grep -q "eth0:" || fail "no eth0 in the pod's namespace"
nsenter -t "$pod" -n cat /proc/self/net/fib_trie | grep -q "10.251.7.10" || fail "eth0 lacks its address"
cat /proc/self/net/fib_trie | grep -q "10.251.7.10" && fail "the pod's address shows in this namespace"
kill "$pod"; wait "$pod" 2>/dev/null
"$NET" del "cgvt$$"
"$NET" del "$br" || fail "delete"
"$NET" bridges cgdrbr | grep -qx "$br" && fail "the bridge is still listed after delete"
for bad in "10.1.2.3" "10.1.2.3/33" "x/24"; do
  out=$("$NET" bridge "$br" "$bad" 2>&1) && fail "bad address '$bad' accepted"
  expect "$out" "not an IPv4 address with a prefix length" "bad address '$bad': the message names it"
done
"$NET" bridges cgdrbr | grep -qx "$br" && fail "a failed call left a bridge"
out=$("$NET" nonsense 2>&1); [ $? -eq 2 ] || fail "unknown command: exit status"
expect "$out" "^usage: cgdr-pods-net" "unknown command: usage"
finish
