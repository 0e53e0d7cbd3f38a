#!/usr/bin/env bash
# Small-message D->D latency (SMALL_KIND: other buffers), repeated: the floor (bare cudaMemcpyPeerAsync), Native and
# Container-Opt run back to back ROUNDS times on one machine, and the median of each size is
# reported. One comparison run's single values move by ±0.5-1 us on the GPU machine, which is
# more than the margins the targets ask for; the medians of alternated rounds are steadier.
#   bench/small-latency.sh BUILD_DIR OUTDIR   (SMALL_ROUNDS, SMALL_RANGE, SMALL_ITERS)
# SMALL_ALT="VAR=VALUE ...": one more Container-Opt and one more Native run per round with those settings (an A/B).
# SMALL_ALT_LIB=PATH: those runs preload this libcgdr.so instead (another build: an A/B of two versions of the code;
# with SMALL_ALT or alone).
# SMALL_KIND=V: cuMem buffers the program makes (cgdr-bench V) instead of cudaMalloc ones (D); H: host buffers
# (the floor, a GPU copy, is then left out).
# SMALL_ALT_KIND=V: the A/B's runs with that kind of buffer (with SMALL_ALT, SMALL_ALT_LIB or alone).
# SMALL_TEST=bw (or bibw): that test instead of latency (window BW_WINDOW, default 16, as
# bench/gpu-compare.sh), rates in MB/s (the floor then its copies' one-way rate is not comparable: left out).
# SMALL_BASE="VAR=VALUE ...": settings of every cgdr run (both sides of the A/B).
# SMALL_CPUS="2,3 2,17": the CPU pairs the two ranks run on (default 2,3), each its own table; the
# floor runs on the pair's first CPU. SMALL_BARE=1: also the bare two-process exchange without cgdr
# (cgdr-ipc-probe's "push pp" at 8 bytes: one peer copy and a zero-byte MPI message a hop).
set -uo pipefail
build=$(cd "${1:?usage: small-latency.sh BUILD_DIR OUTDIR}" && pwd)
out=${2:?OUTDIR}
. "$(dirname "$0")/gpu-env.sh"
range=${SMALL_RANGE:-1:65536}
iters=${SMALL_ITERS:-2000:20}
rounds=${SMALL_ROUNDS:-3}
cpus=${SMALL_CPUS:-2,3}
base=()
for v in ${SMALL_BASE:-}; do base+=(-x "$v"); done
alt=() altlib=$lib altpods=() altname=${SMALL_ALT:-}
for v in ${SMALL_ALT:-}; do alt+=(-x "$v"); done
if [ -n "${SMALL_ALT_LIB:-}" ]; then
  [ -r "$SMALL_ALT_LIB" ] || { echo "small-latency.sh: no library $SMALL_ALT_LIB" >&2; exit 2; }
  # by its full path: the Native runs' ranks preload it from wherever mpirun starts them
  altlib=$(realpath "$SMALL_ALT_LIB") altpods=(--lib "$altlib") altname="${altname:+$altname, }$altlib"
fi
test=${SMALL_TEST:-latency}
kind=${SMALL_KIND:-D}  # both ranks' buffers (cgdr-bench's letters)
altkind=${SMALL_ALT_KIND:-$kind}
for k in "$kind" "$altkind"; do
  case $k in
    H|D|M|V|A) ;;
    *) echo "small-latency.sh: buffer kind '$k' is none of cgdr-bench's H D M V A" >&2; exit 2 ;;
  esac
done
# the floor (a bare GPU peer copy) is measured for latency between GPU buffers only
floor=0
[ "$test" = latency ] && [ "$kind" != H ] && [ "$altkind" != H ] && floor=1
[ "$altkind" = "$kind" ] || altname="${altname:+$altname, }$altkind bufs"
targs=(-i "$iters")
[ "$test" = latency ] || targs=(-i "${BW_ITERS:-200:40}" -x 20:4 -W "${BW_WINDOW:-16}")
# One run of cgdr-bench on the CPU pair $c ($a, $z): native, opt (Container-Opt), alt, natalt (their A/B
# sides, SMALL_ALT / SMALL_ALT_LIB).
one_run() {
  local m=(-m "$range" "${targs[@]}")
  case $1 in
    native) timeout 60 mpirun --cpu-set "$c" --bind-to core -np 2 -x LD_PRELOAD="$lib" "${base[@]}" \
              "$b" "$test" "$kind" "$kind" "${m[@]}" ;;
    opt) timeout 60 "$pods" -n 2 --gpus "$gpus" --cpus "$a;$z" "${base[@]}" -- "$b" "$test" "$kind" "$kind" "${m[@]}" ;;
    alt) timeout 60 "$pods" -n 2 --gpus "$gpus" --cpus "$a;$z" "${altpods[@]}" "${base[@]}" "${alt[@]}" -- \
           "$b" "$test" "$altkind" "$altkind" "${m[@]}" ;;
    natalt) timeout 60 mpirun --cpu-set "$c" --bind-to core -np 2 -x LD_PRELOAD="$altlib" "${base[@]}" "${alt[@]}" \
              "$b" "$test" "$altkind" "$altkind" "${m[@]}" ;;
  esac
}
for ((r = 1; r <= rounds; ++r)); do
  for c in $cpus; do
    a=${c%%,*} z=${c#*,} tag=${c//,/_}
    if [ "$floor" = 1 ]; then
      # the floor's median (column 2) and mean (column 9: cgdr-bench's statistic)
      taskset -c "$a" "$build/bench/cgdr-peer-copy-bench" "${floorargs[@]}" -m "$range" > "$out/floorlog-$tag.$r" 2>&1
      awk '/^ *[0-9]/ {print $1, $2}' "$out/floorlog-$tag.$r" > "$out/floor-$tag.$r"
      awk '/^ *[0-9]/ && NF >= 9 {print $1, $9}' "$out/floorlog-$tag.$r" > "$out/floormean-$tag.$r"
    fi
    # The runs of a round in one order, the next round's in the reverse: a run's place in the round
    # weighs on it (an A/A of bw on one H200 with the runs always in this order: Nat/Nat 0.71-0.97,
    # the Native run first in its round against the one last; Opt/Opt 1.00-1.24), and reversed every
    # other round each pair compared (Opt/Nat, Opt/Opt, Nat/Nat) sits as often in either order.
    runs=(native opt)
    [ -n "$altname" ] && runs+=(alt natalt)
    if ((r % 2 == 0)); then
      for ((i = 0, j = ${#runs[@]} - 1; i < j; ++i, --j)); do x=${runs[i]} runs[i]=${runs[j]} runs[j]=$x; done
    fi
    for run in "${runs[@]}"; do
      one_run "$run" 2>&1 | awk '/^[0-9]/ {print $1, $2}' > "$out/$run-$tag.$r"
    done
    if [ "${SMALL_BARE:-0}" = 1 ] && [ -x "$build/bench/cgdr-ipc-probe" ]; then
      # the "push pp" column of the 8-byte row (bytes, push, pull, push pp, ...)
      timeout 60 mpirun --cpu-set "$c" --bind-to core -np 2 "$build/bench/cgdr-ipc-probe" -i 2000 2>&1 |
        awk '$1 == 8 {print 8, $4}' > "$out/bare-$tag.$r"
    fi
  done
done
python3 - "$out" "$rounds" "$altname" "$cpus" "$test" "$kind" "$floor" <<'PY'
import os, statistics, sys
out, rounds, alt, cpus, test, buf = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4].split(), sys.argv[5], \
    sys.argv[6]
lat, floor = test == "latency", sys.argv[7] == "1"
kinds = ("floor", "floormean", "native", "opt", "alt", "natalt", "bare")
for c in cpus:
    tag = c.replace(",", "_")
    vals, byRound = {}, {}
    for kind in kinds:
        for r in range(1, rounds + 1):
            path = f"{out}/{kind}-{tag}.{r}"
            if not os.path.exists(path):
                continue
            for line in open(path):
                size, v = line.split()
                vals.setdefault((kind, int(size)), []).append(float(v))
                byRound.setdefault((kind, int(size)), {})[r] = float(v)
    med = lambda k, s: statistics.median(vals.get((k, s), [float("nan")]))
    sizes = sorted({s for (k, s) in vals if k != "bare"})
    print(f"{buf}->{buf} {test}, {'us' if lat else 'MB/s'}, ranks on CPUs {c}: median of {rounds} alternated rounds"
          + (" (floor: bare cudaMemcpyPeerAsync, the median of its copies; floor mean: their mean, the"
             " statistic cgdr-bench reports)" if floor else "") + "\n")
    # Columns as (heading, value of a size); the floor's only where it was measured (latency of GPU buffers).
    cols = [("Native", lambda v: v["native"]), ("Container-Opt", lambda v: v["opt"])]
    if floor:
        cols = [("floor", lambda v: v["floor"]), ("floor mean", lambda v: v["floormean"])] + cols + [
            ("Nat/floor", lambda v: v["native"] / v["floor"]), ("Opt/floor", lambda v: v["opt"] / v["floor"]),
            ("Opt/floor mean", lambda v: v["opt"] / v["floormean"])]
    cols.append(("Opt/Nat", lambda v: v["opt"] / v["native"]))
    if alt:
        cols += [(f"Opt ({alt})", lambda v: v["alt"])]
        cols += [(f"Opt ({alt})/floor", lambda v: v["alt"] / v["floor"])] if floor else []
        cols += [(f"Opt/Opt ({alt})", lambda v: v["opt"] / v["alt"]), (f"Native ({alt})", lambda v: v["natalt"]),
                 (f"Nat/Nat ({alt})", lambda v: v["native"] / v["natalt"])]
    print("| size | " + " | ".join(h for h, _ in cols) + " |")
    print("|---:|" + "---:|" * len(cols))
    for s in sizes:
        v = {k: med(k, s) for k in ("floor", "floormean", "native", "opt", "alt", "natalt")}
        print(f"| {s} | " + " | ".join(f"{get(v):.2f}" for _, get in cols) + " |")
    if alt:
        # The rounds paired: a round's runs are minutes apart at most, the rounds drift by ~1 us.
        # (A round whose run of either side failed pairs nothing.)
        def paired(built, other, s):
            x, y = byRound.get((built, s), {}), byRound.get((other, s), {})
            d = [x[r] - y[r] for r in x if r in y]
            return (statistics.median(d), sum((v < 0) == lat for v in d), len(d)) if d else (float("nan"), 0, 0)
        print(f"\nThe same rounds paired, as built minus with {alt}: median difference, {'us' if lat else 'MB/s'},"
              " and the rounds in"
              " which as built was faster\n")
        print("| size | Container-Opt | faster in | Native | faster in |")
        print("|---:|---:|---:|---:|---:|")
        for s in sizes:
            do, fo, no = paired("opt", "alt", s)
            dn, fn, nn = paired("native", "natalt", s)
            print(f"| {s} | {do:+.2f} | {fo}/{no} | {dn:+.2f} | {fn}/{nn} |")
    if ("bare", 8) in vals:
        b = vals[("bare", 8)]
        print(f"\nbare two-process exchange without cgdr, 8 B (cgdr-ipc-probe push pp, median of per-round medians):"
              f" {statistics.median(b):.2f} us (rounds {min(b):.2f}-{max(b):.2f});"
              f" Native 8 B {med('native', 8):.2f}, Container-Opt 8 B {med('opt', 8):.2f}")
    print()
PY
