#!/usr/bin/env bash
# Who shares the ranks' CPUs during an 8-byte D->D ping-pong: cgdr-bench latency runs for a few
# seconds natively and across the pods (ranks on CPUs 2 and 3, as bench/small-latency.sh places
# them), and two samples 2 s apart (taken from CPU 0) give, for every thread of the two ranks, the
# CPU it last ran on and its context switches a second (voluntary: it blocked; involuntary: it was
# preempted, or gave the CPU to another runnable task with sched_yield), and every other thread
# that last ran on CPU 2 or 3 and took CPU time or switched between the samples.
#   bench/cpu-share.sh BUILD_DIR OUTDIR   (SHARE_ALT="VAR=VALUE": each run again with that setting;
#   SHARE_KINDS="H H": host buffers instead, e.g. on a machine without a GPU)
set -uo pipefail
build=$(cd "${1:?usage: cpu-share.sh BUILD_DIR OUTDIR}" && pwd)
out=${2:?OUTDIR}
. "$(dirname "$0")/gpu-env.sh"
sampler() {
  taskset -c 0 python3 - "$(getconf CLK_TCK)" <<'PY'
import glob, sys, time
hz = float(sys.argv[1])
def sample():
    s = {}
    for t in glob.glob("/proc/[0-9]*/task/[0-9]*"):
        try:
            stat = open(t + "/stat").read()
            status = open(t + "/status").read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        f = stat[stat.rindex(")") + 2:].split()  # f[0]: field 3 (state)
        sw = {k: int(v) for k, v in (l.split(":") for l in status.splitlines() if l.endswith(tuple("0123456789"))
                                     and "ctxt_switches" in l)}
        s[t] = (comm, int(f[36]), sw.get("voluntary_ctxt_switches", 0), sw.get("nonvoluntary_ctxt_switches", 0),
                (int(f[11]) + int(f[12])) / hz)
    return s
a = sample()
time.sleep(2)
b = sample()
print(f"{'thread':<16} {'cpu':>3} {'vol/s':>8} {'invol/s':>8} {'cpu ms/s':>8}  pid/task")
for t, (comm, cpu, v, nv, tm) in sorted(b.items(), key=lambda kv: (kv[1][0], kv[0])):
    if t not in a:
        continue
    dv, dn, dt = (v - a[t][2]) / 2, (nv - a[t][3]) / 2, (tm - a[t][4]) / 2 * 1000
    if comm.startswith("cgdr-bench") or (cpu in (2, 3) and (dt > 0 or dv or dn)):
        print(f"{comm[:16]:<16} {cpu:>3} {dv:8.0f} {dn:8.0f} {dt:8.1f}  {t[6:]}")
PY
}
run() {  # $1: label, then the command (about 7 s of 8-byte round trips)
  local label=$1
  shift
  timeout 60 "$@" latency ${SHARE_KINDS:-D D} -m 8:8 -i 400000:20 > "$out/${label//[^A-Za-z0-9_.-]/_}.bench" 2>&1 &
  local job=$!
  sleep 2
  echo "== $label"
  sampler
  wait "$job"
  echo "   latency: $(awk '/^[0-9]/ {print $2 " us"}' "$out/${label//[^A-Za-z0-9_.-]/_}.bench")"
}
for alt in "" ${SHARE_ALT:-}; do
  x=()
  [ -n "$alt" ] && x=(-x "$alt")
  run "native${alt:+ $alt}" mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" "${x[@]}" "$b"
  run "pods${alt:+ $alt}" "$pods" -n 2 --gpus "$gpus" --cpus "2;3" "${x[@]}" -- "$b"
done
