#!/usr/bin/env bash
# Two ranks on one GPU shared through MPS (a private control daemon: its pipe and log directories
# are made here, it is quit at the end). There the two processes' GPU work runs side by side, so
# the pair is served as two GPUs would be: no driver (rank 1 copies too) and the cuMem ring from
# CGDR_CUDA_VMM_STAGE_MIN on, not host staging up to CGDR_CUDA_VMM_STAGE_MIN_SAME_GPU; data checked.
#   mps.sh RUN_MPI MPI LIBCGDR CGDR_INFO CGDR_BENCH P2P_BASIC
set -u
run=$1 mpi=$2 lib=$3 info=$4 bench=$5 p2p=$6
skip() { echo "SKIP gpu.mps: $*"; exit 77; }
fail() { echo "FAIL gpu.mps: $*"; exit 1; }
command -v nvidia-smi > /dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU' || skip "no GPU"
command -v nvidia-cuda-mps-control > /dev/null || skip "nvidia-cuda-mps-control is not installed"
dir=$(mktemp -d /tmp/cgdr-mps-test.XXXXXX)
export CUDA_MPS_PIPE_DIRECTORY=$dir/pipe CUDA_MPS_LOG_DIRECTORY=$dir/log CUDA_VISIBLE_DEVICES=0 CGDR_STATS=1
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
cleanup() {
  echo quit | nvidia-cuda-mps-control > /dev/null 2>&1
  sleep 1
  rm -rf "$dir"
}
trap cleanup EXIT
nvidia-cuda-mps-control -d || fail "the MPS control daemon did not start"

out=$("$info" 2>&1)
grep -q "GPU 0: .*shared through MPS" <<<"$out" || fail "cgdr-info does not see MPS: $(grep 'GPU 0' <<<"$out")"

# A ping-pong between D buffers: both ranks copy (on a time-sliced GPU only rank 0 would).
out=$("$run" 2 cgdr "$mpi" "$lib" "$bench" latency D D -m 1:4194304 -i 50:10 -x 5:2 -c 2>&1)
rc=$?
echo "$out" | grep -E "stats: (channels|GPU copies)"
[ $rc -eq 0 ] && grep -q " Pass" <<<"$out" && ! grep -q FAIL <<<"$out" || fail "latency D D: exit $rc"
grep -q ":0 cgdr WARN shm: stats: GPU copies" <<<"$out" || fail "rank 0 made no GPU copy"
grep -q ":1 cgdr WARN shm: stats: GPU copies" <<<"$out" || fail "rank 1 made no GPU copy (the driver acted under MPS)"

# Pool memory (neither side can map the other's): the cuMem ring from 128 KiB, as between GPUs.
out=$("$run" 2 cgdr "$mpi" "$lib" "$p2p" --kinds AA,AD,DA --sizes 0,1,256K+1,1M+1,2M-1 2>&1)
rc=$?
echo "$out" | grep -E "stats: channels"
[ $rc -eq 0 ] && ! grep -q FAIL <<<"$out" || fail "pool memory: exit $rc"
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" || fail "pool memory under MPS did not take the cuMem ring"
echo "PASS gpu.mps"
