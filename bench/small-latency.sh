#!/usr/bin/env bash
# Small-message D->D latency, repeated: the floor (bare cudaMemcpyPeerAsync), Native and
# Container-Opt run back to back ROUNDS times on one machine, and the median of each size is
# reported. One comparison run's single values move by ±0.5-1 us on the GPU machine, which is
# more than the margins the targets ask for; the medians of alternated rounds are steadier.
#   bench/small-latency.sh BUILD_DIR OUTDIR   (SMALL_ROUNDS, SMALL_RANGE, SMALL_ITERS)
# SMALL_ALT="VAR=VALUE": one more Container-Opt run per round with that setting (an A/B).
set -uo pipefail
build=$(cd "${1:?usage: small-latency.sh BUILD_DIR OUTDIR}" && pwd)
out=${2:?OUTDIR}
. "$(dirname "$0")/gpu-env.sh"
range=${SMALL_RANGE:-1:65536}
iters=${SMALL_ITERS:-2000:20}
for ((r = 1; r <= ${SMALL_ROUNDS:-3}; ++r)); do
  "$build/bench/cgdr-peer-copy-bench" "${floorargs[@]}" -m "$range" 2>&1 | awk '/^ *[0-9]/ {print $1, $2}' > "$out/floor.$r"
  timeout 60 mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" "$b" latency D D -m "$range" -i $iters \
    2>&1 | awk '/^[0-9]/ {print $1, $2}' > "$out/native.$r"
  timeout 60 "$pods" -n 2 --gpus "$gpus" --cpus "2;3" -- "$b" latency D D -m "$range" -i $iters \
    2>&1 | awk '/^[0-9]/ {print $1, $2}' > "$out/opt.$r"
  if [ -n "${SMALL_ALT:-}" ]; then
    timeout 60 "$pods" -n 2 --gpus "$gpus" --cpus "2;3" -x "$SMALL_ALT" -- "$b" latency D D -m "$range" -i $iters \
      2>&1 | awk '/^[0-9]/ {print $1, $2}' > "$out/alt.$r"
  fi
done
python3 - "$out" "${SMALL_ROUNDS:-3}" "${SMALL_ALT:-}" <<'PY'
import os, statistics, sys
out, rounds, alt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
vals = {}
for kind in ("floor", "native", "opt", "alt"):
    for r in range(1, rounds + 1):
        if not os.path.exists(f"{out}/{kind}.{r}"):
            continue
        for line in open(f"{out}/{kind}.{r}"):
            size, v = line.split()
            vals.setdefault((kind, int(size)), []).append(float(v))
sizes = sorted({s for (_, s) in vals})
print(f"D->D latency, us: median of {rounds} alternated rounds (floor: bare cudaMemcpyPeerAsync)\n")
extra = f" Opt ({alt}) | Opt ({alt})/floor |" if alt else ""
print("| size | floor | Native | Container-Opt | Nat/floor | Opt/floor | Opt/Nat |" + extra)
print("|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|" if alt else ""))
for s in sizes:
    f, n, o, a = (statistics.median(vals.get((k, s), [float("nan")])) for k in ("floor", "native", "opt", "alt"))
    row = f"| {s} | {f:.2f} | {n:.2f} | {o:.2f} | {n / f:.2f} | {o / f:.2f} | {o / n:.2f} |"
    print(row + (f" {a:.2f} | {a / f:.2f} |" if alt else ""))
PY
