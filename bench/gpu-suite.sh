#!/usr/bin/env bash
# The GPU machine's one-call suite (nvidia-h200-x2; on a machine of one GPU both ranks and both
# pods share it): builds cgdr, runs the GPU tests and the benchmarks, and leaves logs under $OUT
# (suite.tgz with every log, summary.txt).
#   SUITE_STEPS="env build tests hosttests sanitize pods hostperf compare smallrep winab tune rail probe ab alloc mps visprobe resbench bursts syncafter neighbour bench osu" bench/gpu-suite.sh
# Optional: OMB_DIR=<OSU micro-benchmarks built with CUDA> to run them against cgdr unchanged.
# SUITE_DEADLINE (seconds, default 560): steps that would start after it are skipped, so the
# logs always come back within one device call.
# SUITE_TESTS: a ctest regex narrowing the GPU tests (default: all of them). hosttests (with tests):
# the unit and MPI tests too, on the GPU machine.
set -uo pipefail
t0=$SECONDS
deadline=${SUITE_DEADLINE:-560}
top=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-/tmp/cgdr-suite-out}
steps=${SUITE_STEPS:-env build tests pods hostperf compare}
logs=$(mktemp -d /tmp/cgdr-suite.XXXXXX)/logs
mkdir -p "$logs"
build=$top/build-gpu out=$OUT
# The environment, the programs ($b, $lib, $pods) and the GPU layout ($gpus: one GPU per rank/pod,
# "0;1", or on a machine of one GPU both on it, "0;0").
. "$top/bench/gpu-env.sh"
summary=$OUT/summary.txt
: > "$summary"
say() { echo "$*" | tee -a "$summary"; }
left() { echo $((deadline - (SECONDS - t0))); }
has() {
  [[ " $steps " == *" $1 "* ]] || return 1
  if [ "$(left)" -lt "${2:-20}" ]; then say "$1: skipped ($(left) s left before the deadline)"; return 1; fi
  say "--- $1 (at $((SECONDS - t0)) s)"
}
mpirun2() { timeout "${STEP_TIMEOUT:-120}" mpirun --bind-to core --map-by core -np 2 "$@"; }
withcgdr() { echo -x "LD_PRELOAD=$lib"; }
# skip_reasons BUILD CTEST_LOG: for each test the ctest run logged as skipped, the reason it gave
# (its first "SKIP ..." or "SKIP: ..." line, bare or after a "rank N: " prefix as the Python tests
# print it, or the message under gtest's "Skipped"), from BUILD's LastTest.log.
skip_reasons() {
  local names
  names=$(sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .*\*\*\*Skipped.*/\1/p' "$2")
  [ -n "$names" ] || return 0
  WANT=$names awk '
    BEGIN { n = split(ENVIRON["WANT"], w, "\n"); for (i = 1; i <= n; i++) keep[w[i]] = 1 }
    /^[0-9]+\/[0-9]+ Testing: / { name = $3; grab = 0; next }
    grab { if (!(name in why)) why[name] = $0; grab = 0; next }
    /: Skipped$/ { grab = 1; next }
    /^(rank [0-9]+: )?SKIP[: ]/ { if (!(name in why)) why[name] = $0 }
    END { for (t in keep) print "  skipped " t ": " (t in why ? why[t] : "(no reason in its output)") }
  ' "$(last_test_log "$1")" | sort
}
# last_test_log BUILD: ctest's detailed log of BUILD's last run. ctest writes it as LastTest.log.tmp
# and renames it when done, so a .tmp left there is that of a ctest stopped by `timeout`.
last_test_log() {
  local d=$1/Testing/Temporary
  if [ -f "$d/LastTest.log.tmp" ]; then echo "$d/LastTest.log.tmp"; else echo "$d/LastTest.log"; fi
}
# ctest_verdict CTEST_LOG LIMIT: ctest's "N% tests passed" line; where ctest printed none (stopped at
# its LIMIT seconds, say), how many tests ended and how, and which started and never ended.
ctest_verdict() {
  grep -E 'tests passed' "$1" && return 0
  awk -v lim="$2" '
    /^ +Start +[0-9]+: / { started[$2 + 0] = $3 }
    / Test +#[0-9]+: / {
      n++; split($0, a, "/"); total = a[2] + 0
      sub(/.*#/, ""); ended[$1 + 0] = 1
      if ($0 ~ /\*\*\*Skipped/) sk++; else if ($0 ~ / Passed /) ok++; else bad++
    }
    END {
      line = "no result (ctest, given " lim " s, printed no summary); "
      if (n == 0) line = line "no test ended"
      else line = line n " of " total " tests ended (" ok + 0 " passed, " sk + 0 " skipped, " bad + 0 " failed)"
      for (i in started) if (!(i in ended)) open_ = open_ " " started[i]
      print line (open_ == "" ? "" : "; still running:" open_)
    }' "$1"
}

if has env 10; then
  {
    date -u; uname -a; nvidia-smi -L; nvidia-smi topo -m; mpirun --version | head -1
    cmake --version | head -1; gcc --version | head -1; nvcc --version | tail -1
    ls /usr/lib/x86_64-linux-gnu | grep -E "gtest|benchmark|hwloc|ucm|ucp" || true
    ucx_info -v 2>/dev/null | head -3 || true
    lscpu; lscpu -e
  } > "$logs/env.log" 2>&1
  say "env: $(nvidia-smi -L 2>/dev/null | wc -l) GPUs; $(mpirun --version 2>/dev/null | head -1)"
  # The CPUs the benchmarks bind to (2 and 3): whether the guest calls them threads of one core.
  say "env: $(nproc) CPUs, $(lscpu | awk -F: '/^Thread\(s\) per core/ {gsub(/ /, "", $2); print $2}') thread(s) per core;" \
    "siblings of CPU 2: $(cat /sys/devices/system/cpu/cpu2/topology/thread_siblings_list 2>/dev/null)," \
    "of CPU 3: $(cat /sys/devices/system/cpu/cpu3/topology/thread_siblings_list 2>/dev/null)"
fi

# build_in DIR LOG [CMAKE ARGS...]: configures and builds cgdr against the machine's Open MPI.
# A warm machine keeps DIR from an earlier call, and the tree copied in since may carry older
# times than DIR's objects (a file changed back and forth between calls): such a build used a
# stale libcgdr.so (fifty-fourth session). So each source whose content differs from the one DIR
# was last built from (all of them where that is not recorded) is touched first.
build_in() {
  local dir=$1 log=$2 prefix=() gen=()
  shift 2
  local sums=$dir/.cgdr-source-sums
  mkdir -p "$dir"
  (cd "$top" && find CMakeLists.txt cmake include src tests tools bench -type f -print0 | sort -z |
    xargs -0 sha1sum) > "$sums.new"
  [ -f "$sums" ] || { [ -f "$dir/CMakeCache.txt" ] && : > "$sums"; }  # built before the sums: touch all
  [ -f "$sums" ] && (cd "$top" && comm -13 <(sort "$sums") <(sort "$sums.new") | cut -c43- | xargs -r -d '\n' touch)
  [ -d "$top/.deps" ] && prefix=(-DCMAKE_PREFIX_PATH="$top/.deps")
  command -v ninja >/dev/null && gen=(-G Ninja)
  cmake -S "$top" -B "$dir" "${gen[@]}" "${prefix[@]}" -DCGDR_MPI=openmpi -DMPI_C_COMPILER="$(command -v mpicc)" "$@" \
    > "$log" 2>&1 && cmake --build "$dir" -j"$(nproc)" >> "$log" 2>&1 && mv "$sums.new" "$sums"
}
if has build 100; then
  if build_in "$build" "$logs/build.log"; then
    say "build: ok"
  else
    say "build: FAILED (see build.log); the other steps are skipped"; grep -E "error" -A3 "$logs/build.log" | head -30
    steps="env"
  fi
fi
export LD_LIBRARY_PATH="$top/.deps/lib/x86_64-linux-gnu:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

if has tests 60; then
  # Time kept for the long steps after the tests, where they were asked for.
  reserve=30; [[ " $steps " == *" pods "* || " $steps " == *" compare "* ]] && reserve=240
  lim=$(( $(left) - reserve )); [ $lim -gt 450 ] && lim=450; [ $lim -lt 60 ] && lim=60
  (cd "$build" && timeout "$lim" ctest -L gpu -R "${SUITE_TESTS:-.}" -j4 --timeout 200 --output-on-failure) > "$logs/gpu-tests.log" 2>&1
  say "gpu tests: $(ctest_verdict "$logs/gpu-tests.log" "$lim")"
  grep -E "Failed|\*\*\*|FAIL|Timeout" "$logs/gpu-tests.log" | head -30 | tee -a "$summary"
  skip_reasons "$build" "$logs/gpu-tests.log" | head -40 | tee -a "$summary"
  if [[ " $steps " == *" hosttests "* ]]; then
    hlim=150
    (cd "$build" && timeout $hlim ctest -L "unit|mpi" -j8 --timeout 120 --output-on-failure) > "$logs/host-tests.log" 2>&1
    say "host tests on the GPU machine: $(ctest_verdict "$logs/host-tests.log" $hlim)"
  fi
fi

if has sanitize 120; then
  # The GPU tests and the pods GPU test again, built with AddressSanitizer and UBSan.
  sb=$top/build-gpu-asan
  if build_in "$sb" "$logs/sanitize-build.log" -DCGDR_SANITIZE=address,undefined; then
    . "$top/scripts/asan-env.sh"
    # (at most 300 s where the pods test follows; all 127 GPU tests took longer: sixty-second session)
    lim=$(( $(left) - 20 )); [[ " $steps " == *" pods "* ]] && [ $lim -gt 300 ] && lim=300
    (cd "$sb" && timeout "$lim" ctest -L gpu -R "${SUITE_TESTS:-.}" -j4 --timeout 200 --output-on-failure) > "$logs/sanitize-tests.log" 2>&1
    say "gpu tests under ASan/UBSan: $(ctest_verdict "$logs/sanitize-tests.log" "$lim")"
    grep -E "Failed|\*\*\*|FAIL|Timeout" "$logs/sanitize-tests.log" | head -30 | tee -a "$summary"
    skip_reasons "$sb" "$logs/sanitize-tests.log" | head -40 | tee -a "$summary"
    grep -hE "ERROR: AddressSanitizer|runtime error" "$logs/sanitize-tests.log" | sort | uniq -c | head -20 | tee -a "$summary"
    if [[ " $steps " == *" pods "* ]] && [ "$(left)" -gt 80 ]; then
      (cd "$sb" && timeout $(( $(left) - 20 )) "$top/tests/pods/gpu.sh" "$sb") > "$logs/sanitize-pods.log" 2>&1
      say "pods GPU test under ASan/UBSan: exit $?"; grep -E "^(FAIL|PASS)|AddressSanitizer|runtime error" "$logs/sanitize-pods.log" | head -20 | tee -a "$summary"
    fi
    unset ASAN_OPTIONS UBSAN_OPTIONS
  else
    say "sanitize build: FAILED (see sanitize-build.log)"; grep -E "error" -A3 "$logs/sanitize-build.log" | head -20
  fi
fi

if has pods 60; then
  lim=$(( $(left) - 10 )); [ $lim -gt 420 ] && lim=420
  (cd "$build" && timeout "$lim" "$top/tests/pods/gpu.sh" "$build") > "$logs/pods-gpu.log" 2>&1
  say "pods GPU test: exit $?"; grep -E "^(FAIL|PASS|SKIP|pair|step)" "$logs/pods-gpu.log" | head -40 | tee -a "$summary"
fi

if has compare 100; then
  # A run's limit (unless COMPARE_TIMEOUT is set): the time left shared out over the runs (one
  # per mode and round, plus the far-off ones unless COMPARE_FAR=0). Runs end before their
  # limit, so the tests are not counted (the limit is there to stop a hung run).
  read -r -a cm <<< "${COMPARE_MODES:-native opt optvmm${gpusall:+ optvmmall}}"
  far=7; [ "${COMPARE_FAR:-1}" = 0 ] && far=1
  nccl=0; [ "${COMPARE_NCCL:-1}" != 0 ] && [ "$gpus" != "0;0" ] && nccl=21  # 3 tests: native x2, pods (x2), pods-id, pods-shm, pods-net
  div=$(( ${#cm[@]} * ${COMPARE_ROUNDS:-3} + far + nccl ))
  COMPARE_TIMEOUT=${COMPARE_TIMEOUT:-$(( $(left) / div > 20 ? $(left) / div : 20 ))} \
    "$top/bench/gpu-compare.sh" "$build" "$logs/compare" "$logs/compare/gpu-compare.md" "$logs/compare/gpu-compare.png" \
    > "$logs/compare.log" 2>&1
  say "compare: exit $?"; grep -E "exit [1-9]" "$logs/compare.log" | head | tee -a "$summary"
  cat "$logs/compare/gpu-compare.md" >> "$summary" 2>/dev/null
fi

if has hostperf 60; then
  # Issue 5: host buffers, 2 ranks: cgdr in 2 pods vs the plain MPI natively and across pods;
  # cgdr with CGDR_LOCALITY=off vs no cgdr (what cgdr costs on traffic it does not carry).
  hp() {  # NAME COMMAND...
    local n=$1; shift
    timeout 60 "$@" > "$logs/$n.log" 2>&1 || say "$n: exit $?"
  }
  hpj=$logs/hostperf
  mkdir -p "$hpj"
  nat=(mpirun --bind-to core --map-by core -np 2)
  for t in latency bw; do
    o="-m 0:4M"; [ $t = latency ] && o="-m 0:4M -i 20000:1000"
    hp "$t-HH-plainnative" "${nat[@]}" "$b" $t H H $o --json "$hpj/$t-HH-plainnative.json"
    hp "$t-HH-cgdrnative" "${nat[@]}" -x LD_PRELOAD="$lib" "$b" $t H H $o --json "$hpj/$t-HH-cgdrnative.json"
    hp "$t-HH-cgdrnativenocma" "${nat[@]}" -x LD_PRELOAD="$lib" -x CGDR_SHM_CMA=0 "$b" $t H H $o \
      --json "$hpj/$t-HH-cgdrnativenocma.json"
    hp "$t-HH-cgdrpods" "$pods" -n 2 --cpus "2;3" -- "$b" $t H H $o --json "$hpj/$t-HH-cgdrpods.json"
    hp "$t-HH-plainpods" "$pods" -n 2 --cpus "2;3" --no-cgdr -- "$b" $t H H $o --json "$hpj/$t-HH-plainpods.json"
    hp "$t-HH-offpods" "$pods" -n 2 --cpus "2;3" -x CGDR_LOCALITY=off -- "$b" $t H H $o --json "$hpj/$t-HH-offpods.json"
  done
  python3 "$top/bench/side-by-side.py" "$logs/hostperf" | tee -a "$summary"
fi

if has smallrep 60; then
  # Small-message latency, floor / Native / Container-Opt alternated SMALL_ROUNDS times (medians;
  # SMALL_CPUS, SMALL_BARE, SMALL_ALT: see the script).
  timeout 240 "$top/bench/small-latency.sh" "$build" "$logs/smallrep" > "$logs/smallrep.log" 2>&1
  say "smallrep: exit $?"; cat "$logs/smallrep.log" >> "$summary"
fi

if has winab 60; then
  # Windows of small GPU messages with and without the copy kernel (bench/window-ab.sh; WAB_*).
  mkdir -p "$logs/winab"
  timeout 400 "$top/bench/window-ab.sh" "$build" "$logs/winab" > "$logs/winab.log" 2>&1
  say "winab: exit $?"; cat "$logs/winab.log" >> "$summary"
fi

if has tune 60; then
  # Switch points and sizes of the pipelines: host chunks across pods (H H) and the cuMem staging
  # ring's block (D D across pods), a few settings side by side.
  for v in ${TUNE_HOST:-"CGDR_SHM_CHUNKS=16"}; do
    say "tune H H pods bw $v: $(timeout 40 "$pods" -n 2 --cpus "2;3" -x "$v" -- "$b" bw H H -m 512K:4M 2>&1 |
      grep -E '^[0-9]' | awk '{printf "%s=%.1f ", $1, $2/1000}')"
  done
  for v in ${TUNE_DEV:-"CGDR_CUDA_STAGE_SLOTS=4" "CGDR_CUDA_STAGE_SLOTS=8" "CGDR_CUDA_BLOCK_SIZE=32M"}; do
    say "tune D D pods bw $v: $(timeout 40 "$pods" -n 2 --gpus "$gpus" --cpus "2;3" -x "$v" -- "$b" bw D D -m 4M:256M \
      -i 20:4 -W 16 2>&1 | grep -E '^[0-9]' | awk '{printf "%s=%.1f ", $1, $2/1000}')"
  done
  for v in ${TUNE_LAT:-"CGDR_FORCE_CHANNEL=auto"}; do
    say "tune D D pods latency $v: $(timeout 40 "$pods" -n 2 --gpus "$gpus" --cpus "2;3" -x "$v" -- "$b" latency D D \
      -m 1:4M -i 200:20 2>&1 | grep -E '^[0-9]' | awk '{printf "%s=%.1f ", $1, $2}')"
  done
fi

if has rail 60; then
  # The host rail beside NVLink by share (CGDR_CUDA_HOST_RAIL_SHARE and _INVISIBLE, or "default":
  # the defaults; RAIL_X: more settings, e.g.
  # "CGDR_CUDA_HOST_RAIL_OFFSET=0"): D D latency (us), bw and bibw (GB/s; RAIL_TESTS) across pods
  # and natively, the shares alternated RAIL_ROUNDS times.
  for ((r = 1; r <= ${RAIL_ROUNDS:-1}; ++r)); do
    for sh in ${RAIL_SHARES:-0 0.06 0.1 0.14}; do
      xs=(-x CGDR_CUDA_HOST_RAIL_SHARE=$sh -x CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE=$sh)
      [ "$sh" = default ] && xs=()
      for v in ${RAIL_X:-}; do xs+=(-x "$v"); done
      for t in ${RAIL_TESTS:-latency bw bibw}; do
        div=1; [ $t != latency ] && div=1000
        say "rail $r pods $t $sh: $(timeout 60 "$pods" -n 2 --gpus "$gpus" --cpus "2;3" "${xs[@]}" -- "$b" $t D D \
          -m ${RAIL_RANGE:-8M:256M} 2>&1 | grep -E '^[0-9]' | awk -v d=$div '{printf "%s=%.1f ", $1, $2/d}')"
        say "rail $r native $t $sh: $(timeout 60 mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" \
          "${xs[@]}" "$b" $t D D -m ${RAIL_RANGE:-8M:256M} 2>&1 | grep -E '^[0-9]' |
          awk -v d=$div '{printf "%s=%.1f ", $1, $2/d}')"
      done
    done
  done
fi

# A/B of settings, natively and across pods, side by side in one call (PROBE_TEST: latency, bw,
# bibw): PROBE="WHERE:KINDS:SETTING ..." (SETTING VAR=VALUE[,VAR=VALUE...] or "-"); first
# cgdr-ipc-probe (copies between two processes without cgdr), unless PROBE_IPC=0.
probe_all() {
  [ "${PROBE_IPC:-1}" = 1 ] && [ -x "$build/bench/cgdr-ipc-probe" ] && timeout 60 mpirun --cpu-set 2,3 --bind-to core -np 2 \
    "$build/bench/cgdr-ipc-probe" 2>&1 | tee -a "$summary"
  for p in ${PROBE:-"native:DD:-" "native:VV:-" "pods:VV:-" "pods:DV:-" "native:DD:CGDR_CUDA_PUSH=always"}; do
    IFS=: read -r where kinds v <<<"$p"
    [ "$v" = - ] && v=CGDR_FORCE_CHANNEL=auto
    xs=()
    IFS=, read -ra kv <<<"$v"
    for x in "${kv[@]}"; do xs+=(-x "$x"); done
    args=(${PROBE_TEST:-latency} "${kinds:0:1}" "${kinds:1:1}" -m "${PROBE_RANGE:-1:1M}" -i ${PROBE_ITERS:-1000:20}
          ${PROBE_ARGS:-})  # PROBE_ARGS: more cgdr-bench options, e.g. "-W 16"
    tr=(-x CGDR_STATS=1)  # PROBE_TRACE=0: without the per-step trace (its clock reads change races)
    [ "${PROBE_TRACE:-1}" = 1 ] && tr+=(-x CGDR_TRACE_GPU=1)
    # native: both GPUs visible to both ranks; native1: each rank sees only its GPU; pods: one
    # GPU per pod; pods2: both GPUs visible in both pods (each uses its own first).
    case $where in
      native) r=$(timeout 40 mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" "${tr[@]}" "${xs[@]}" \
                  "$b" "${args[@]}" 2>&1) ;;
      native1) r=$(timeout 40 mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" "${tr[@]}" "${xs[@]}" \
                   bash -c 'export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK; exec "$0" "$@"' "$b" "${args[@]}" 2>&1) ;;
      pods) r=$(timeout 40 "$pods" -n 2 --gpus "$gpus" --cpus "2;3" "${tr[@]}" "${xs[@]}" -- "$b" "${args[@]}" 2>&1) ;;
      pods2) r=$(timeout 40 "$pods" -n 2 --gpus "0,1;1,0" --cpus "2;3" "${tr[@]}" "${xs[@]}" -- "$b" "${args[@]}" 2>&1) ;;
      # podsx: pods on swapped CPUs; podscpu2: two CPUs per pod (the pod's daemon beside the rank)
      podsx) r=$(timeout 40 "$pods" -n 2 --gpus "$gpus" --cpus "3;2" "${tr[@]}" "${xs[@]}" -- "$b" "${args[@]}" 2>&1) ;;
      podscpu2) r=$(timeout 40 "$pods" -n 2 --gpus "$gpus" --cpus "2,4;3,5" "${tr[@]}" "${xs[@]}" -- "$b" "${args[@]}" 2>&1) ;;
    esac
    say "probe $where $kinds $v: $(grep -E '^[0-9]' <<<"$r" | awk '{printf "%s=%.2f ", $1, $2}')"
    grep -E "trace|channels|GPU copies|GPU buffers|adverts:|advert waits|host rail" <<<"$r" | sed 's/^[^: ]*:[0-9]*:\(-\{0,1\}[0-9]*\) cgdr.*stats: /  rank \1: /; s/^.*stats: /  /' | tee -a "$summary"
  done
}

if has probe 30; then probe_all; fi

# A/B of this tree's libcgdr against another tree's on the same machine: AB_TAR, a `git archive`
# tarball of the other tree (made here, carried in .deps/), is built beside this one (the library
# and cgdr-pods only); then AB_ROUNDS rounds of this tree's cgdr-bench (AB_TEST, AB_KINDS between
# two pods over AB_RANGE, AB_ARGS), the two libraries in turns, each round in the other order.
if has ab 90 && [ -f "${AB_TAR:-}" ]; then
  abs=$(mktemp -d /tmp/cgdr-ab.XXXXXX)
  tar xf "$AB_TAR" -C "$abs" --strip-components=1
  abpre=(); [ -d "$top/.deps" ] && abpre=(-DCMAKE_PREFIX_PATH="$top/.deps")
  if cmake -S "$abs" -B "$abs/build" -G Ninja "${abpre[@]}" -DCGDR_MPI=openmpi -DMPI_C_COMPILER="$(command -v mpicc)" \
       > "$logs/ab-build.log" 2>&1 && cmake --build "$abs/build" -j"$(nproc)" --target cgdr cgdr-pods-net >> "$logs/ab-build.log" 2>&1; then
    say "ab: other tree built ($(tar tf "$AB_TAR" | head -1))"
    kinds=${AB_KINDS:-DD} t=${AB_TEST:-bw}
    for round in $(seq 1 "${AB_ROUNDS:-4}"); do
      order="this other"; [ $((round % 2)) = 0 ] && order="other this"
      for name in $order; do
        pp=$pods; [ $name = other ] && pp=$abs/build/bin/cgdr-pods
        say "ab $t $kinds round $round $name: $(timeout 60 "$pp" -n 2 --gpus "$gpus" --cpus "2;3" -- "$b" $t "${kinds:0:1}" \
          "${kinds:1:1}" -m "${AB_RANGE:-256K:4M}" ${AB_ARGS:-} 2>&1 | grep -E '^[0-9]' | awk '{printf "%s=%.2f ", $1, $2}')"
      done
    done
  else
    say "ab: the other tree did not build (see ab-build.log)"; tail -5 "$logs/ab-build.log"
  fi
fi

# What an allocation costs the program (cgdr-bench alloc D|A, both ranks at once): the exportable
# heap against the runtime, in turns (ALLOC_ROUNDS rounds; CGDR_CUDA_MALLOC / _ASYNC off and
# exportable).
if has alloc 30; then
  for round in $(seq 1 "${ALLOC_ROUNDS:-2}"); do
    for k in A D; do
      var=CGDR_CUDA_MALLOC_ASYNC
      [ $k = D ] && var=CGDR_CUDA_MALLOC
      for v in off exportable; do
        r=$(timeout 60 mpirun --cpu-set 2,3 --bind-to core -np 2 -x LD_PRELOAD="$lib" -x CGDR_STATS=1 -x "$var=$v" \
            "$b" alloc $k -m "${ALLOC_RANGE:-256:64M}" -i "${ALLOC_ITERS:-4000:400}" 2>&1)
        say "alloc $k $var=$v round $round: $(grep -E '^[0-9]' <<<"$r" | awk '{printf "%s=%.2f ", $1, $2}')"
        grep -m1 "exportable heap" <<<"$r" | sed 's/^.*stats: /  /' | tee -a "$summary"
      done
    done
  done
fi

# The same under MPS (a private control daemon, its pipe and log directories made here, quit at the
# end): where several processes' GPU work runs side by side instead of in turns. MPS_TESTS=1 runs
# the GPU tests under it as well.
if has mps 60; then
  if command -v nvidia-cuda-mps-control > /dev/null; then
    mpsdir=$(mktemp -d /tmp/cgdr-mps.XXXXXX)
    export CUDA_MPS_PIPE_DIRECTORY=$mpsdir/pipe CUDA_MPS_LOG_DIRECTORY=$mpsdir/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    if nvidia-cuda-mps-control -d; then
      say "mps: daemon started; $("$build/tools/cgdr-info/cgdr-info" 2>&1 | grep -m1 ' GPU 0:')"
      probe_all
      if [ "${MPS_TESTS:-0}" = 1 ]; then
        lim=$(( $(left) - 20 )); [ $lim -lt 60 ] && lim=60
        (cd "$build" && timeout "$lim" ctest -L gpu -R "${SUITE_TESTS:-.}" -j4 --timeout 200 \
          --output-on-failure) > "$logs/gpu-tests-mps.log" 2>&1
        say "gpu tests under MPS: $(ctest_verdict "$logs/gpu-tests-mps.log" "$lim")"
        grep -E "Failed|\*\*\*|FAIL|Timeout" "$logs/gpu-tests-mps.log" | head -30 | tee -a "$summary"
        skip_reasons "$build" "$logs/gpu-tests-mps.log" | head -40 | tee -a "$summary"
      fi
      echo quit | nvidia-cuda-mps-control
      sleep 1
      cp -r "$CUDA_MPS_LOG_DIRECTORY" "$logs/mps-log" 2>/dev/null
    else
      say "mps: the control daemon did not start"
    fi
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
  else
    say "mps: nvidia-cuda-mps-control is not installed"
  fi
fi

if has visprobe 30; then
  # Copy issue/run cost to another process's GPU memory with that GPU visible or not, by the way
  # the copy is issued (bench/vis_probe/; no cgdr).
  mkdir -p "$build"; vp=$build/cgdr-vis-probe
  if nvcc -O2 -arch=sm_90 -o "$vp" "$top"/bench/vis_probe/*.cu -lcuda $(mpicxx --showme:compile) \
       $(mpicxx --showme:link) > "$logs/visprobe-build.log" 2>&1; then
    for v in both one; do
      timeout 60 mpirun --cpu-set 2,3 --bind-to core -np 2 "$vp" $v -i "${VISPROBE_ITERS:-2000}" ${VISPROBE_ARGS:-} 2>&1 | tee -a "$summary"
    done
  else
    say "visprobe: build failed"; tail -5 "$logs/visprobe-build.log" | tee -a "$summary"
  fi
fi

if has resbench 30; then
  # The resident copy kernel alone, GPU 0 to GPU 1, one copy at a time, per number of blocks and
  # the largest copy the first moves alone (RESBENCH_CONFIGS: BLOCKS:SOLO ...), the limit at
  # RESBENCH_LIMIT (bench/resident_bench.cc; no MPI).
  for cfg in ${RESBENCH_CONFIGS:-1 8:16K 8:64K 16:64K}; do
    nb=${cfg%%:*} solo=16K
    [[ $cfg == *:* ]] && solo=${cfg#*:}
    CGDR_CUDA_RESIDENT=always CGDR_CUDA_RESIDENT_BLOCKS=$nb CGDR_CUDA_RESIDENT_SOLO=$solo \
      CGDR_CUDA_RESIDENT_LIMIT=${RESBENCH_LIMIT:-1M} \
      taskset -c 2 timeout 60 "$build/bench/cgdr-resident-bench" -m "${RESBENCH_RANGE:-8:1M}" \
      -i "${RESBENCH_ITERS:-2000}" 2>&1 | tee -a "$summary"
  done
fi

if has bursts 30; then
  # Bursts of small copies after lulls (the kernel left): the later copies of each, posted while
  # the kernel the earlier ones started is launched but not running, wait for its start (the
  # default CGDR_CUDA_RESIDENT_START_WAIT) or go to the copy engine (0); CGDR_CUDA_RESIDENT=auto
  # (cgdr-resident-bench -b; no MPI).
  # BURST_GAPS: also 0 (no lull: the kernel stays between bursts); BURST_ROUNDS: the whole set again.
  for ((r = 1; r <= ${BURST_ROUNDS:-1}; ++r)); do
  for g in ${BURST_GAPS:-200}; do
    for n in ${BURST_SIZES:-8 4K}; do
      for b in ${BURST_COUNTS:-4 16}; do
        for w in 0 30; do
          CGDR_CUDA_RESIDENT_START_WAIT=$w taskset -c 2 timeout 60 "$build/bench/cgdr-resident-bench" -m "$n:$n" \
            -b "$b" -g "$g" -i "${BURST_ITERS:-2000}" 2>&1 | tee -a "$summary"
        done
      done
    done
  done
  done
fi

if has syncafter 20; then
  # A cudaDeviceSynchronize right after a small copy: the resident kernel left running (it stays
  # for its idle time, 20 us), asked to leave first (as cgdr's cudaDeviceSynchronize and cudaFree
  # do), and after a copy-engine copy (cgdr-resident-bench -y; no MPI).
  CGDR_CUDA_RESIDENT=always taskset -c 2 timeout 60 "$build/bench/cgdr-resident-bench" -m 8:8 \
    -y "${SYNC_ITERS:-2000}" 2>&1 | tee -a "$summary"
fi

if has neighbour 40; then
  # Another job's process on GPU 0 (bench/gpu_neighbour.cc: copy kernels back to back, no MPS) beside
  # a cgdr process sending one small copy at a time, 10 us apart (cgdr-resident-bench -l): the
  # neighbour's kernel turnaround alone, then beside the load with the kernel watching for turns
  # (CGDR_CUDA_RESIDENT_BACKOFF, the default 1000 ms), not watching (0: before the fifty-second
  # session) and off (the copy engine).
  nb=$build/bench/cgdr-gpu-neighbour
  say "neighbour alone: $(taskset -c 4 timeout 30 "$nb" -s "${NEIGHBOUR_SECONDS:-3}" | tail -1)"
  for cfg in "CGDR_CUDA_RESIDENT=always" "CGDR_CUDA_RESIDENT=always CGDR_CUDA_RESIDENT_BACKOFF=0" \
             "CGDR_CUDA_RESIDENT=off"; do
    env $cfg taskset -c 2 timeout 60 "$build/bench/cgdr-resident-bench" -m 8:8 -l $((${NEIGHBOUR_SECONDS:-3} + 2)) \
      > "$logs/neighbour-load.log" 2>&1 &
    sleep 1
    n=$(taskset -c 4 timeout 30 "$nb" -s "${NEIGHBOUR_SECONDS:-3}" | tail -1)
    wait
    say "$cfg: neighbour $n"
    say "  $(tail -1 "$logs/neighbour-load.log")"
  done
  # No other process, PCIe kept busy by this one (64 MiB host -> GPU -> host beside the copies): the
  # kernel's looks at its mailbox go over PCIe and must not come 100 us apart (it would leave).
  CGDR_CUDA_RESIDENT=always taskset -c 2 timeout 60 "$build/bench/cgdr-resident-bench" -m 8:8 -l 3 -p 64M 2>&1 |
    tee -a "$summary"
fi

if has bench 60; then
  if [ -x "$build/bench/cgdr-classify-bench" ]; then
    "$build/bench/cgdr-classify-bench" --benchmark_repetitions=10 --benchmark_report_aggregates_only=true \
      > "$logs/classify.log" 2>&1
    say "classification (median):"; grep median "$logs/classify.log" | tee -a "$summary"
  fi
  for t in latency bw; do
    mpirun2 $(withcgdr) "$b" $t D D -m 0:4M --json "$logs/$t-DD-cgdr.json" > "$logs/$t-DD-cgdr.log" 2>&1
    mpirun2 $(withcgdr) "$b" $t H H -m 0:4M --json "$logs/$t-HH-cgdr.json" > "$logs/$t-HH-cgdr.log" 2>&1
    mpirun2 "$b" $t H H -m 0:4M --json "$logs/$t-HH-plain.json" > "$logs/$t-HH-plain.log" 2>&1
  done
  mpirun2 $(withcgdr) "$b" bibw D D -m 0:4M > "$logs/bibw-DD-cgdr.log" 2>&1
  for t in allreduce bcast; do
    mpirun2 $(withcgdr) "$b" $t -d cuda -m 4:1M --json "$logs/$t-DD-cgdr.json" > "$logs/$t-DD-cgdr.log" 2>&1
    mpirun2 "$b" $t -d host -m 4:1M --json "$logs/$t-HH-plain.json" > "$logs/$t-HH-plain.log" 2>&1
  done
  mpirun2 $(withcgdr) "$b" latency M M -m 0:1M -c > "$logs/latency-MM-cgdr.log" 2>&1
  python3 "$top/bench/side-by-side.py" "$logs" >> "$summary" 2>&1 || true
fi

if [ -n "${OMB_DIR:-}" ] && [ -d "$OMB_DIR" ] && has osu 40; then
  pt=$OMB_DIR/c/mpi/pt2pt/standard
  [ -d "$pt" ] || pt=$OMB_DIR/c/mpi/pt2pt
  for t in osu_latency osu_bw; do
    mpirun2 $(withcgdr) "$pt/$t" -d cuda -m 0:4194304 D D > "$logs/$t-DD-cgdr.log" 2>&1
    mpirun2 "$pt/$t" -m 0:4194304 H H > "$logs/$t-HH-plain.log" 2>&1
    say "$t D D through cgdr (last lines):"; tail -4 "$logs/$t-DD-cgdr.log" | tee -a "$summary"
  done
  co=$OMB_DIR/c/mpi/collective/blocking
  for t in osu_allreduce osu_bcast; do
    mpirun2 $(withcgdr) "$co/$t" -d cuda -m 4:1048576 > "$logs/$t-cuda-cgdr.log" 2>&1
    say "$t -d cuda through cgdr: exit $? (last lines):"; tail -3 "$logs/$t-cuda-cgdr.log" | tee -a "$summary"
  done
  mpirun2 "$pt/osu_latency" -d cuda -m 0:64 D D > "$logs/osu_latency-DD-plain.log" 2>&1
  say "osu_latency D D on the plain MPI: exit $? ($(grep -ciE 'segmentation|signal' "$logs/osu_latency-DD-plain.log") crash lines)"
fi

tar czf "$OUT/suite.tgz" -C "$(dirname "$logs")" logs
echo "===== summary"; cat "$summary"
