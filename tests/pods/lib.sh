# Helpers for the cgdr-pods tests: BIN (build dir) is the first argument of every test.
set -u
BIN=${1:?usage: test.sh BUILD_DIR}
PODS=$BIN/bin/cgdr-pods
INFO=$BIN/tools/cgdr-info/cgdr-info
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Failures are counted in a file: a step's function often runs in a subshell (out=$(run ...)), where
# a counter would be lost; each is also printed on stderr, which such a capture leaves visible.
failed=$(mktemp /tmp/pods-test-failures.XXXXXX)
trap 'rm -f "$failed"' EXIT
if [ "$(id -u)" != 0 ] || ! unshare --net true 2>/dev/null; then
  echo "SKIP: creating namespaces needs root (cgdr-pods tests)"
  exit 77
fi
fail() { echo "FAIL: $*" | tee -a "$failed" >&2; }
# expect OUTPUT PATTERN WHAT: the output has a line matching the extended regex.
expect() { grep -Eq -- "$2" <<<"$1" || { fail "$3: no line matches '$2'"; echo "$1" | grep -E "^(pair|matrix|rank [0-9]+ ->)" | head -8; }; }
refuse() { grep -Eq -- "$2" <<<"$1" && fail "$3: a line matches '$2'"; return 0; }
leftovers() { ls -A "$1" 2>/dev/null | grep -E '^cgdr-' || true; }
# settle SECONDS COMMAND...: waits up to SECONDS for COMMAND to stop succeeding; fails if it still
# does then. A killed process, a namespace's last members and what they held take a moment to go
# (longer on a loaded machine), so a check right after the kill would race with the kernel.
settle() {
  local end=$((SECONDS + $1)); shift
  while "$@"; do [ $SECONDS -ge $end ] && return 1; sleep 0.1; done
  return 0
}
running() { pgrep -f "$1" >/dev/null; }       # a process whose command line holds $1 exists
holds_files() { [ -n "$(leftovers "$1")" ]; }  # cgdr files are in directory $1
starting() { [ "$(grep -c '^ready' "$1")" -lt "$2" ]; }  # log $1 holds fewer than $2 "ready" lines
no_bridges() {
  local left
  left=$("$BIN/bin/cgdr-pods-net" bridges cgdrbr) || { fail "cannot list the bridges"; return 0; }
  [ -n "$left" ] && fail "a cgdr-pods bridge was left behind: $left"
  return 0
}
finish() {
  no_bridges
  local failures
  failures=$(wc -l < "$failed")
  [ "$failures" -eq 0 ] && echo "PASS $(basename "$0")" || echo "FAIL $(basename "$0") ($failures)"
  [ "$failures" -eq 0 ]
}
