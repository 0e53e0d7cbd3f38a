#!/usr/bin/env bash
# Configures and builds cgdr against one MPI: scripts/build.sh [openmpi|mpich] [BUILD_DIR] [CMAKE ARGS...]
set -euo pipefail
mpi=${1:-openmpi}
dir=${2:-build}
shift $(($# < 2 ? $# : 2))
[ "$mpi" = mpich ] && [ "$dir" = build ] && dir=build-mpich
top=$(cd "$(dirname "$0")/.." && pwd)
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$top" -B "$top/$dir" "${gen[@]}" -DCGDR_MPI="$mpi" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$top/$dir" -j"$(nproc)"
