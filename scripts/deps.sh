#!/usr/bin/env bash
# Installs the Debian 12 packages cgdr needs to build and test (root; skipped if present).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config openmpi-bin libopenmpi-dev mpich libmpich-dev
      libhwloc-dev hwloc libnuma-dev libgtest-dev libgmock-dev libbenchmark-dev util-linux
      procps python3 python3-mpi4py python3-numpy)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
