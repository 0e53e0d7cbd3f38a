#!/usr/bin/env bash
# Runs the unit and multi-process tests (Open MPI) built with ThreadSanitizer and fails on any
# report whose first frame outside the sanitizer is cgdr's (libcgdr.so or a file of this tree):
# the helper thread, MPI_THREAD_MULTIPLE and the progress engine's shared state. Open MPI's own
# reports (its uninstrumented locks and progress thread) are counted and left alone.
#   scripts/tsan.sh [BUILD_DIR]   (default build-tsan)
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
dir=$top/${1:-build-tsan}
"$top/scripts/build.sh" openmpi "${1:-build-tsan}" -DCGDR_SANITIZE=thread || exit 1
logs=$dir/tsan-logs
rm -rf "$logs" && mkdir -p "$logs"

# The check must be able to fail: a program of this tree with a data race has to be reported.
canary=$dir/tsan-canary
cat > "$canary.cc" <<'EOF'
#include <thread>
int shared;
int main() {
  std::thread t([] { shared = 1; });
  shared = 2;
  t.join();
  return 0;
}
EOF
c++ -fsanitize=thread -g -O1 "$canary.cc" -o "$canary" || exit 1
TSAN_OPTIONS="halt_on_error=0 exitcode=0 log_path=$logs/canary" "$canary"

export TSAN_OPTIONS="halt_on_error=0 exitcode=0 report_signal_unsafe=0 log_path=$logs/r"
rc=0
(cd "$dir" && ctest -L "unit|mpi" --output-on-failure --timeout 900) || rc=1

python3 - "$top" "$logs" <<'EOF' || rc=1
import glob, os, re, sys
top, logs = sys.argv[1], sys.argv[2]
frame = re.compile(r"^\s+#\d+ .*?(\S+) \((\S+?)\+0x[0-9a-f]+\)$")  # location, module
def ours(block):
    # The first frame of each stack that is not the sanitizer's interceptor decides.
    for stack in re.split(r"\n\s*\n", block):
        for line in stack.splitlines():
            m = frame.match(line)
            if not m or "libtsan" in m.group(2):
                continue
            if m.group(2).startswith("libcgdr.so") or m.group(1).startswith(top + "/"):
                return True
            break
    return False
def reports(pattern):
    out = []
    for f in sorted(glob.glob(os.path.join(logs, pattern))):
        text = open(f, errors="replace").read()
        out += [b for b in text.split("==================") if "WARNING: ThreadSanitizer" in b]
    return out
canary = [b for b in reports("canary.*") if ours(b)]
if not canary:
    print("tsan: the canary's data race was not reported: the check cannot be trusted")
    sys.exit(1)
found = reports("r.*")
mine = [b for b in found if ours(b)]
print(f"tsan: {len(found)} reports in all, {len(mine)} in cgdr's code (canary reported: yes)")
for b in mine[:5]:
    print(b)
sys.exit(1 if mine else 0)
EOF
exit $rc
