#!/usr/bin/env bash
# Copies the Debian packages the GPU machine lacks (GoogleTest, Google Benchmark, hwloc headers)
# into .deps/ (git-ignored) with their /usr layout, so `run` can carry them there and CMake finds
# them with CMAKE_PREFIX_PATH=.deps. Run here before a GPU run; nothing in .deps is committed.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$top/.deps"
mkdir -p "$top/.deps"
for pkg in libgtest-dev libbenchmark-dev libbenchmark1debian libhwloc-dev libhwloc15; do
  dpkg -L "$pkg" 2>/dev/null | while read -r f; do
    case "$f" in
      /usr/include/*|/usr/lib/x86_64-linux-gnu/*.a|/usr/lib/x86_64-linux-gnu/*.so*|/usr/lib/x86_64-linux-gnu/cmake/*|/usr/lib/x86_64-linux-gnu/pkgconfig/*)
        [ -f "$f" ] || [ -L "$f" ] || continue
        dest="$top/.deps/${f#/usr/}"
        mkdir -p "$(dirname "$dest")"
        cp -a "$f" "$dest" ;;
    esac
  done || true
done
du -sh "$top/.deps"
