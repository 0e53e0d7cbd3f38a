#!/usr/bin/env bash
# Who shares the ranks' CPUs during an 8-byte D->D ping-pong: cgdr-bench latency runs for a few
# seconds natively and across the pods (ranks on CPUs 2 and 3, as bench/small-latency.sh places
# them; SHARE_CPUS="A,B" others), and two samples 2 s apart (taken from CPU 0 where the ranks are
# not on it) give, for every thread of the two ranks, the
# CPU it last ran on and its context switches a second (voluntary: it blocked; involuntary: it was
# preempted, or gave the CPU to another runnable task with sched_yield), and every other thread
# that last ran on either rank's CPU and took CPU time or switched between the samples.
#   bench/cpu-share.sh BUILD_DIR OUTDIR   (SHARE_ALT="VAR=VALUE": each run again with that setting;
#   SHARE_KINDS="H H": host buffers instead, e.g. with SHARE_CPUS=0,1 on the 2-core CPU machines)
set -uo pipefail
build=$(cd "${1:?usage: cpu-share.sh BUILD_DIR OUTDIR}" && pwd)
out=${2:?OUTDIR}
. "$(dirname "$0")/gpu-env.sh"
cpus=${SHARE_CPUS:-2,3} kinds=${SHARE_KINDS:-D D}
iters=400000  # ~7 s of 8-byte round trips between GPUs; host ones are ~20x faster
[[ $kinds == *D* ]] || iters=8000000
pin=(taskset -c 0)
[[ ",$cpus," == *,0,* ]] && pin=()
sampler() {
  "${pin[@]}" python3 - "$(getconf CLK_TCK)" "$cpus" <<'PY'
import glob, sys, time
hz = float(sys.argv[1])
ranks = {int(c) for c in sys.argv[2].split(",")}
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
        sw = {k: int(v) for k, v in (l.split(":") for l in status.splitlines() if "ctxt_switches:" in l)}
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
    if comm.startswith("cgdr-bench") or (cpu in ranks and (dt > 0 or dv or dn)):
        print(f"{comm[:16]:<16} {cpu:>3} {dv:8.0f} {dn:8.0f} {dt:8.1f}  {t[6:]}")
PY
}
run() {  # $1: label, then the command
  local label=$1 log=$out/${1//[^A-Za-z0-9_.-]/_}.bench
  shift
  timeout 60 "$@" latency $kinds -m 8:8 -i "$iters:20" > "$log" 2>&1 &
  local job=$!
  sleep 2
  echo "== $label"
  sampler
  wait "$job"
  echo "   latency: $(awk '/^[0-9]/ {print $2 " us"}' "$log")"
}
for alt in "" ${SHARE_ALT:-}; do
  x=()
  [ -n "$alt" ] && x=(-x "$alt")
  run "native${alt:+ $alt}" mpirun --cpu-set "$cpus" --bind-to core -np 2 -x LD_PRELOAD="$lib" "${x[@]}" "$b"
  run "pods${alt:+ $alt}" "$pods" -n 2 --gpus "$gpus" --cpus "${cpus/,/;}" "${x[@]}" -- "$b"
done
