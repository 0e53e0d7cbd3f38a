#!/usr/bin/env bash
# Nothing is left behind: a stale segment and socket of a killed job neither break nor confuse a
# new job and are removed; nothing remains after a normal exit, after kill -9 of the ranks, or
# after Ctrl-C on cgdr-pods (no processes, no bridge).
. "$(dirname "$0")/lib.sh"
HOLD=$BIN/tests/mpi/hold
vol=$(mktemp -d /tmp/cgdr-vol.XXXXXX)
chmod 1777 "$vol"
uid=$(id -u)

# A leftover of a killed job: an old segment with garbage, and a socket nobody listens on.
stale="$vol/cgdr-$uid-00000000deadbeef-loc"
head -c 100000 /dev/urandom > "$stale"
chmod 600 "$stale"
python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$vol/cgdr-$uid-00000000deadbeef-sock"
touch -h -d '-1 hour' "$stale" "$vol/cgdr-$uid-00000000deadbeef-sock"
out=$("$PODS" -n 2 --private-shm --shared-dir "$vol" -- "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=2 engine=1 shm=1" "new job next to a stale segment"
[ -z "$(leftovers "$vol")" ] || fail "stale or new files remain: $(leftovers "$vol")"

# kill -9 of the ranks while they run.
log=$(mktemp)
"$PODS" -n 2 --private-shm --shared-dir "$vol" -- "$HOLD" 60 > "$log" 2>&1 &
pods=$!
settle 10 starting "$log" 2 || fail "held ranks did not start: $(tail -3 "$log")"
pkill -KILL -f "$HOLD 60"
wait $pods
settle 10 running "$HOLD 60" || fail "ranks survive kill -9"
settle 10 holds_files "$vol" || fail "files remain after kill -9: $(leftovers "$vol")"

# Ctrl-C on cgdr-pods itself: the pods and everything in them go away. (A background job of a
# script ignores SIGINT; the wrapper restores the default an interactive shell would give it.)
python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execvp(sys.argv[1], sys.argv[1:])' \
  "$PODS" -n 2 --shared-dir "$vol" -- "$HOLD" 60 > "$log" 2>&1 &
pods=$!
settle 10 starting "$log" 2 || fail "held ranks did not start before Ctrl-C: $(tail -3 "$log")"
start=$SECONDS
kill -INT $pods
wait $pods
[ $((SECONDS - start)) -lt 20 ] || fail "cgdr-pods took $((SECONDS - start)) s to stop after Ctrl-C"
settle 10 running "$HOLD 60" || fail "ranks survive Ctrl-C on cgdr-pods"
settle 10 running "sleep 2147483647" || fail "pod init processes survive Ctrl-C"
settle 10 holds_files "$vol" || fail "files remain after Ctrl-C: $(leftovers "$vol")"
settle 10 holds_files /dev/shm || fail "files remain in /dev/shm: $(leftovers /dev/shm)"
mpirun_alive() { ps -eo stat=,comm= | awk '$2 == "mpirun" && $1 !~ /^Z/ {found=1} END {exit !found}'; }
settle 10 mpirun_alive || fail "mpirun survives Ctrl-C on cgdr-pods"
# A shared directory too small for the ranks' segments (a container's small /dev/shm): cgdr says
# so, naming the directory, the job runs through the real MPI and nothing is left there (no
# SIGBUS at the first touch of a page past the limit). A tmpfs in a mount namespace of its own:
# 2 MiB holds the locality segment but not the engine's; 4 KiB not even the locality segment.
for size in 2m:"no engine for co-located ranks" 4k:"no locality segment"; do
  small=$(mktemp -d /tmp/cgdr-small.XXXXXX)
  out=$(unshare -m --propagation private bash -c 'd=$1 s=$2; shift 2; mount -t tmpfs -o "size=$s,mode=1777" tmpfs "$d" && "$@"' \
        _ "$small" "${size%%:*}" "$PODS" -n 2 --shared-dir "$small" -- \
        "$BIN/tools/cgdr-bench/cgdr-bench" latency H H -m 1:64K -i 200:20 2>&1)
  rc=$?
  what="shared directory of ${size%%:*}"
  [ $rc = 0 ] || fail "$what: exit $rc: $(tail -5 <<<"$out")"
  expect "$out" "${size#*:} \(no room for [0-9]+ bytes in $small .*shm-size" "$what"
  expect "$out" "^65536 " "$what: the benchmark ran"
  [ -z "$(leftovers "$small")" ] || fail "files remain in the $what: $(leftovers "$small")"
  rmdir "$small" 2>/dev/null || fail "the $what is still mounted or not empty"
done
rm -rf "$vol" "$log"
finish
