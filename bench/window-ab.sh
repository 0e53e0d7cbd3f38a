#!/usr/bin/env bash
# Windows of GPU messages under two sets of settings, A and B, natively and across two pods,
# alternated in rounds: bw and bibw D->D, MB/s per size, the median of the rounds and each mode's
# ratio of A to B, and Container-Opt over Native either way. By default A is cgdr as built and B
# has the copy kernel off (CGDR_CUDA_BATCH=off).
#   bench/window-ab.sh BUILD_DIR OUTDIR   (WAB_RANGE=1:65536 WAB_ROUNDS=3 WAB_WINDOW=16 WAB_TESTS="bw bibw"
#                                          WAB_A="" WAB_B="CGDR_CUDA_BATCH=off": space-separated NAME=VALUE)
set -uo pipefail
build=$1 out=$2
source "$(dirname "$0")/gpu-env.sh"
range=${WAB_RANGE:-1:65536} rounds=${WAB_ROUNDS:-3}
setA=${WAB_A-} setB=${WAB_B-CGDR_CUDA_BATCH=off}
echo "A: ${setA:-as built}; B: ${setB:-as built}"
for t in ${WAB_TESTS:-bw bibw}; do
  for r in $(seq 1 "$rounds"); do
    for m in nat nat-b pods pods-b; do
      x=(-x CGDR_STATS=1)
      if [[ $m == *-b ]]; then for v in $setB; do x+=(-x "$v"); done; else for v in $setA; do x+=(-x "$v"); done; fi
      bench=("$b" "$t" D D -m "$range" -i 200:40 -x 20:4 -W "${WAB_WINDOW:-16}")
      if [[ $m == nat* ]]; then
        timeout 60 mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" "${x[@]}" "${bench[@]}" > "$out/$t-$m.r$r.log" 2>&1
      else
        timeout 60 "$pods" -n 2 --gpus "$gpus" --cpus "2;3" "${x[@]}" -- "${bench[@]}" > "$out/$t-$m.r$r.log" 2>&1
      fi
      echo "$t $m round $r: exit $?; $(grep -h 'copy kernel' "$out/$t-$m.r$r.log" | head -1 | sed 's/.*GPU copies: //')"
    done
  done
done
python3 - "$out" "$rounds" "${setA:-as built}" "${setB:-as built}" ${WAB_TESTS:-bw bibw} <<'PY'
import re, statistics, sys
out, rounds, nameA, nameB, tests = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
def rates(path):
    d = {}
    try:
        for line in open(path, errors="replace"):
            m = re.match(r"^\s*(\d+)\s+([0-9.]+)", line)
            if m: d[int(m.group(1))] = float(m.group(2))
    except OSError: pass
    return d
for t in tests:
    modes = ["nat", "nat-b", "pods", "pods-b"]
    runs = {m: [rates(f"{out}/{t}-{m}.r{r}.log") for r in range(1, rounds + 1)] for m in modes}
    sizes = sorted(set().union(*[set(d) for m in modes for d in runs[m]]))
    print(f"\n{t} (MB/s, median of {rounds} rounds; A: {nameA}, B: {nameB})\n| size | Native A | Native B | Container-Opt A | Container-Opt B | Nat A/B | Opt A/B | Opt/Nat (A) | Opt/Nat (B) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in sizes:
        med = {m: statistics.median([d[s] for d in runs[m] if s in d]) if any(s in d for d in runs[m]) else float("nan") for m in modes}
        r = lambda a, b: med[a] / med[b] if med[b] else float("nan")
        print(f"| {s} | {med['nat']:.2f} | {med['nat-b']:.2f} | {med['pods']:.2f} | {med['pods-b']:.2f} | "
              f"{r('nat','nat-b'):.2f} | {r('pods','pods-b'):.2f} | {r('pods','nat'):.2f} | {r('pods-b','nat-b'):.2f} |")
PY
