#!/usr/bin/env bash
# C-GDR's comparison on one host with two GPUs (nvidia-h200-x2): two ranks, one GPU each, in two
# simulated containers with separate PID (and UTS, net, mount) namespaces, device buffers:
#   Container-Def  cgdr with CGDR_LOCALITY=off: everything goes through the real MPI
#   Container-Opt  cgdr in container mode: co-located GPU channels across the namespaces; the
#                  benchmark's cudaMalloc comes from cgdr's exportable heap (CGDR_CUDA_MALLOC=auto;
#                  cgdr-bench links the shared CUDA runtime), so messages go zero-copy
#   Container-Opt (heap off)  the same with CGDR_CUDA_MALLOC=off: runtime cudaMalloc buffers,
#                  which cannot be shared across PID namespaces (two copies through staging)
#   Native         cgdr, both ranks in one namespace
#   floor          a bare cudaMemcpyPeerAsync of the same size (cgdr-peer-copy-bench)
# Every variant runs on CPUs 2 and 3, one rank each,
# plus Container-Opt with exportable cuMem buffers (V V: zero copy), in containers that see only
# their own GPU (as the others) and in containers that see both (--gpus "0,1;1,0", each rank on
# its own first: the driver's copies between GPUs it can see are faster). For latency, bw and bibw,
# sizes 1 B .. 256 MiB. Writes the raw results under OUTDIR, and the table (markdown) and the
# plot (PNG) to the given docs paths; prints which channel served each size. On a machine of one
# GPU both ranks (and both pods) share it, the floor is a bare copy within it, and the all-GPUs-
# visible variant is left out (OUTDIR/layout.txt says so for the report).
# NCCL (where bench/find-nccl.sh finds it and there are two GPUs): the same tests through
# ncclSend/ncclRecv natively and across the pods (see below), for the report's NCCL table.
# Native, Container-Opt and Container-Opt (V bufs), the modes the targets compare, run in
# COMPARE_ROUNDS rounds (default 3), each round in another order; the table gives each size's
# median over the rounds and the spread of the per-round Opt/Nat ratio (one run per mode moved a
# size by 20–40 % between runs on a one-GPU H100 VM); Native and Container-Opt up to 1 MiB in
# COMPARE_SMALL_ROUNDS (default 9; see below). The far-off modes (heap off, Def) run once.
#   bench/gpu-compare.sh BUILD_DIR OUTDIR [TABLE.md PLOT.png]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: gpu-compare.sh BUILD_DIR OUTDIR [TABLE.md PLOT.png]}" && pwd)
out=${2:?OUTDIR}
table=${3:-$out/gpu-compare.md}
plot=${4:-$out/gpu-compare.png}
. "$(dirname "$0")/gpu-env.sh"
range=${COMPARE_RANGE:-1:268435456}
limit=${COMPARE_TIMEOUT:-240}
declare -A opts=(
  [latency]="-i ${LAT_ITERS:-2000:500} -x 200:20"
  [bw]="-i ${BW_ITERS:-200:40} -x 20:4 -W ${BW_WINDOW:-16}"
  [bibw]="-i ${BW_ITERS:-200:40} -x 20:4 -W ${BW_WINDOW:-16}"
)
# The network path (Container-Def, NCCL across the pods as they come) is ~100x slower for large
# messages: fewer large iterations there, and twice the time (a run stopped by its limit still
# reports the sizes it printed). Latency elsewhere takes 200, so that one context switch of the
# GPU (~150 us) moves a size's mean by under 1 us.
declare -A optsNet=(
  [latency]="-i ${LAT_ITERS_DEF:-2000:20} -x 200:5"
  [bw]="-i ${BW_ITERS_DEF:-200:2} -x 20:1 -W ${BW_WINDOW:-16}"
  [bibw]="-i ${BW_ITERS_DEF:-200:2} -x 20:1 -W ${BW_WINDOW:-16}"
)
# Sizes above 8 KiB run the second count of -i: 40 windows there, since 4 (64 messages, well under
# a millisecond at 16 KiB-1 MiB) let one stall or a lucky start decide a whole run (64 KiB bibw
# 3.4-29.5 GB/s in one mode; docs/performance.md, eighteenth session).
tests=${COMPARE_TESTS:-latency bw bibw}

run() {  # NAME TIMEOUT COMMAND...: output in $out/NAME.log
  local name=$1 t=$2
  shift 2
  timeout --kill-after=10 "$t" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc"
  [ $rc -eq 0 ] || tail -5 "$out/$name.log"
}

# layout.txt: the machine (one GPU or two), then who uses which GPU, naming the GPU model (the
# report's text and plot title say what the numbers were measured on).
gpuname=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
if [ "$gpus" = "0;0" ]; then
  printf 'one GPU\nTwo ranks sharing one GPU (%s)\n' "${gpuname:-GPU model unknown}" > "$out/layout.txt"
else
  printf 'two GPUs\nTwo ranks, one GPU each (%s)\n' "${gpuname:-GPU model unknown}" > "$out/layout.txt"
fi
"$build/bench/cgdr-peer-copy-bench" "${floorargs[@]}" -m "$range" --json "$out/floor.json" > "$out/floor.log" 2>&1
echo "floor: exit $?"
# One run of a mode of test $t: MODE NAME TIMEOUT CGDR-BENCH-OPTIONS... (output NAME.log, NAME.json).
# native: cgdr, both ranks in one namespace; the others: two pods, D buffers unless named.
mode() {
  local m=$1 name=$2 lim=$3 k=D g=$gpus x=(-x CGDR_STATS=1)
  shift 3
  case $m in
    optvmm) k=V ;;
    optvmmall) k=V g=$gpusall ;;
    optstage) x+=(-x CGDR_CUDA_MALLOC=off) ;;
    def) x=(-x CGDR_LOCALITY=off) ;;
  esac
  local bench=("$b" "$t" $k $k -m "${mrange:-$range}" "$@" --json "$out/$name.json")
  if [ "$m" = native ]; then
    run "$name" "$lim" mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" "${x[@]}" "${bench[@]}"
  else
    run "$name" "$lim" "$pods" -n 2 --gpus "$g" --cpus "2;3" "${x[@]}" -- "${bench[@]}"
  fi
}

rounds=${COMPARE_ROUNDS:-3}
modes=(native opt optvmm); [ -n "$gpusall" ] && modes+=(optvmmall)
# COMPARE_MODES: the modes run in rounds (default: all of the above); COMPARE_FAR=0 leaves out the
# far-off modes run once (heap off, Def): e.g. many rounds of one test to settle a ratio near 0.95.
if [ -n "${COMPARE_MODES:-}" ]; then
  read -r -a named <<< "$COMPARE_MODES"
  modes=()
  for m in "${named[@]}"; do
    case $m in
      native|opt|optvmm) modes+=("$m") ;;
      optvmmall) if [ -n "$gpusall" ]; then modes+=("$m")
                 else echo "COMPARE_MODES: optvmmall left out: one GPU, no other for the containers to see"; fi ;;
      *) echo "COMPARE_MODES: unknown mode '$m' (native opt optvmm optvmmall)" >&2; exit 2 ;;
    esac
  done
  [ ${#modes[@]} -gt 0 ] || { echo "COMPARE_MODES: no mode left to run" >&2; exit 2; }
fi
# The sizes up to COMPARE_SMALL_MAX (default 1 MiB) take well under a second of a run's ~2 s, and
# one run's ratio to Native there moved 0.72-1.65 from round to round up to 8 KiB (a rank's CPU
# path runs slower for a whole run, as the host decides; forty-third and forty-sixth sessions) and
# 1.01-1.34 at 32 KiB-1 MiB (forty-ninth): Native and Container-Opt, the pair the 5 % target
# compares, run COMPARE_SMALL_ROUNDS rounds in all there (default 9), the further ones over those
# sizes only, and their medians are over every round. (A range in bytes, [MIN:]MAX as cgdr-bench's
# -m, MIN 0 where not given; one with K/M suffixes keeps COMPARE_ROUNDS everywhere.)
smallmax=${COMPARE_SMALL_MAX:-1048576}
[[ $smallmax =~ ^[0-9]+$ ]] || { echo "COMPARE_SMALL_MAX: a size in bytes, not '$smallmax'" >&2; exit 2; }
small=${COMPARE_SMALL_ROUNDS:-9}
lo=0 hi=${range##*:}
[[ $range == *:* ]] && lo=${range%%:*}
[[ $lo =~ ^[0-9]+$ && $hi =~ ^[0-9]+$ ]] && [ "$small" -gt "$rounds" ] && [ "$lo" -le "$smallmax" ] &&
  [[ " ${modes[*]} " == *" native "* && " ${modes[*]} " == *" opt "* ]] || small=$rounds
srange=""; [ "$small" -gt "$rounds" ] && srange="$lo:$(( hi < smallmax ? hi : smallmax ))"
echo "$rounds $small $smallmax" > "$out/rounds.txt"
far=${COMPARE_FAR:-1}
for t in $tests; do
  o=${opts[$t]}
  # Round 1 writes NAME.json (its log names the channels), round r > 1 NAME.rR.json; the order
  # rotates so that no mode always runs first (or right after Container-Def's long run).
  for r in $(seq 1 "$rounds"); do
    sfx=""; [ "$r" -gt 1 ] && sfx=".r$r"
    k=$(( (r - 1) % ${#modes[@]} ))
    for m in "${modes[@]:$k}" "${modes[@]:0:$k}"; do mode "$m" "$t-$m$sfx" "$limit" $o; done
  done
  for r in $(seq $((rounds + 1)) "$small"); do
    sm=(native opt); [ $((r % 2)) = 1 ] && sm=(opt native)  # (the order alternates)
    for m in "${sm[@]}"; do mrange=$srange mode "$m" "$t-$m.r$r" "$limit" $o; done
  done
  [ "$far" = 0 ] && continue
  mode optstage "$t-optstage" "$limit" $o
  mode def "$t-def" "$((limit * 2))" ${optsNet[$t]}
done
# NCCL beside cgdr (COMPARE_NCCL=0 leaves it out): the same tests through ncclSend/ncclRecv
# (cgdr-bench --nccl; MPI only starts the ranks, cgdr not loaded), natively and across the same two
# pods. NCCL takes the pods for two hosts (another hostname each) unless told otherwise, so three
# runs there: as it comes (its network transport); NCCL_HOSTID shared (NCCL's setting to call them
# one host: it picks P2P over cuMem, whose file descriptors its proxies pass over abstract Unix
# sockets, which do not cross network namespaces); NCCL_HOSTID shared with cuMem and P2P off
# (NCCL_CUMEM_ENABLE=0 NCCL_P2P_DISABLE=1: through host shared memory, the pods sharing /dev/shm);
# and NCCL_HOSTID shared in pods left in the host's network namespace (cgdr-pods --shared-net, as
# docker --network=host or Kubernetes' hostNetwork), where those sockets do reach the other pod.
# Natively also with --nccl-blocking (the stream synchronized after each call: each message done
# before the next step, as MPI's blocking calls; by default NCCL's calls are queued, its best).
# NCCL's proxy and network threads need cores of their own (on one core each a small message took
# ~2 ms through its sockets), so its ranks get four cores each (cgdr's: one). NCCL_DEBUG=INFO logs
# name the transport each channel took (the report quotes them). One run each; the network runs
# with Container-Def's iterations.
nccl=""
[ "${COMPARE_NCCL:-1}" != 0 ] && nccl=$("$top/bench/find-nccl.sh")
if [ -n "$nccl" ] && [ "$gpus" = "0;0" ]; then
  echo "NCCL: left out on one GPU (NCCL refuses two ranks on one GPU)" | tee "$out/nccl.txt"
elif [ -n "$nccl" ]; then
  echo "NCCL: $nccl" | tee "$out/nccl.txt"
  nx=(-x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET -x NCCL_NVLS_ENABLE=0)
  np=("$pods" -n 2 --no-cgdr --gpus "$gpus" --cpus "2-5;6-9" "${nx[@]}")
  shm=(-x NCCL_HOSTID=cgdr-pods -x NCCL_CUMEM_ENABLE=0 -x NCCL_P2P_DISABLE=1)
  for t in $tests; do
    o=${opts[$t]}
    nb=("$b" "$t" D D -m "$range" --nccl "$nccl")
    run "$t-ncclnative" "$limit" mpirun --cpu-set 2-9 --bind-to none -np 2 "${nx[@]}" "${nb[@]}" $o \
      --json "$out/$t-ncclnative.json"
    run "$t-ncclnativeblk" "$limit" mpirun --cpu-set 2-9 --bind-to none -np 2 "${nx[@]}" "${nb[@]}" $o \
      --nccl-blocking --json "$out/$t-ncclnativeblk.json"
    run "$t-ncclpodsid" "$limit" "${np[@]}" -x NCCL_HOSTID=cgdr-pods -- "${nb[@]}" $o --json "$out/$t-ncclpodsid.json"
    run "$t-ncclpodsshm" "$limit" "${np[@]}" "${shm[@]}" -- "${nb[@]}" $o --json "$out/$t-ncclpodsshm.json"
    run "$t-ncclpodsnet" "$limit" "${np[@]}" --shared-net -x NCCL_HOSTID=cgdr-pods -- "${nb[@]}" $o \
      --json "$out/$t-ncclpodsnet.json"
    run "$t-ncclpods" "$((limit * 2))" "${np[@]}" -- "${nb[@]}" ${optsNet[$t]} --json "$out/$t-ncclpods.json"
  done
elif [ "${COMPARE_NCCL:-1}" != 0 ]; then
  echo "NCCL: no library found (bench/find-nccl.sh): the NCCL columns are left out" | tee "$out/nccl.txt"
fi
python3 "$top/bench/compare-report.py" "$out" "$table" "$plot"
