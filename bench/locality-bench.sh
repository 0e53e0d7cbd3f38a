#!/usr/bin/env bash
# Detection cost for 2..64 ranks on this host (oversubscribed as needed), natively and across
# simulated containers (one rank per pod up to 8 pods, then 8 pods with several ranks each).
#   bench/locality-bench.sh BUILD_DIR [MAX_RANKS]
set -u
b=${1:-build}
max=${2:-64}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo "# native (one namespace)"
for n in 2 4 8 16 32 64; do
  [ $n -le "$max" ] || break
  mpirun --oversubscribe --bind-to none -np $n "$b/bench/cgdr-locality-bench" 10 2>&1 | grep '^ranks'
done
if [ "$(id -u)" = 0 ]; then
  echo "# across simulated containers (cgdr-pods)"
  for n in 2 4 8 16 32 64; do
    [ $n -le "$max" ] || break
    pods=$((n < 8 ? n : 8))
    "$b/bin/cgdr-pods" --no-cgdr -n $pods -r $((n / pods)) -- "$b/bench/cgdr-locality-bench" 10 2>&1 | grep '^ranks'
  done
fi
