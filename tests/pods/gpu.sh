#!/usr/bin/env bash
# GPUs across simulated containers (issues 4 and 6): two pods with separate PID namespaces, one
# GPU each ("0;1"), or, on a machine of one GPU, both pods on it ("0;0": containers sharing a
# GPU). The locality report must show the GPUs and their path (NVLink, or the same GPU), legacy
# CUDA IPC refused (the importer cannot see the exporter's PID) and cuMem fd sharing allowed;
# natively (where cgdr-info leaves both ranks on GPU 0), IPC is allowed. Data tests across the
# pods with device, managed, exportable cuMem and stream-ordered pool buffers, with the
# scheduler's choice, push and pull, and with each cross-namespace channel forced; and pods in the
# host's network namespace. Skipped without a GPU.
. "$(dirname "$0")/lib.sh"
T=$BIN/tests/mpi
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${ngpu:-0}" -lt 1 ] || [ ! -x "$T/p2p_basic" ]; then
  echo "SKIP: pods GPU tests need a GPU (found ${ngpu:-0}) (GPU test)"
  exit 77
fi
G="0;1" path="sameGpu=0 nvlink=1 path=NVLink" pathWhat="NVLink"
if [ "$ngpu" -lt 2 ]; then
  G="0;0" path="sameGpu=1 nvlink=0 path=same GPU" pathWhat="the same GPU"
  echo "note: one GPU: both pods share GPU 0 (the two-GPU layout runs on a machine with two)" >&2
fi
run() {  # run LABEL PODS-ARGS... -- PROGRAM ARGS...
  local label=$1 t0=$SECONDS
  shift
  local out
  out=$(CGDR_STATS=1 timeout 300 "$PODS" "$@" 2>&1)
  grep -q "^PASS" <<<"$out" || fail "$label: $(grep -E 'FAIL|rror|killed' <<<"$out" | head -3)"
  # every GPU copy through the host chunks must find them page-locked (ShmEngine::checkPinned)
  grep -q "not page-locked" <<<"$out" && fail "$label: $(grep -o 'host chunks not page-locked.*' <<<"$out" | head -2)"
  echo "step '$label': $((SECONDS - t0)) s" >&2
  grep -E "stats: (channels|sizes)" <<<"$out" | sort -u | head -12 >&2
  echo "$out"
}

# What NVML and the identity records say about the GPUs and their links, for the log.
"$PODS" -n 2 --gpus "$G" -x CGDR_LOG_LEVEL=debug -x CGDR_LOG_SUBSYS=topo -- "$INFO" 2>&1 |
  grep -E "NVLink|NVML|GPU [0-9]" | sort -u | head -20 >&2
out=$("$PODS" -n 2 --gpus "$G" -- "$INFO" --locality 2>&1)
echo "$out" | grep -E "^(rank [0-9]+ ->|pair)" | head -4
expect "$out" "^pair 0 1 relation=2 engine=1 .*ipcImport=0 ipcExport=0 vmm=1 $path" \
  "pods: a co-located container, no legacy IPC, cuMem fd, $pathWhat"
expect "$out" "legacy CUDA IPC import no \(" "pods: the report says why legacy IPC is refused"
out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_PRELOAD="$BIN/src/libcgdr.so" \
      "$INFO" --locality 2>&1)
expect "$out" "^pair 0 1 relation=1 engine=1 .*ipcImport=1 ipcExport=1 vmm=1 " \
  "native: same namespace, legacy IPC and cuMem"

sizes="0,1,3,8K+1,256K+1,1M+1,4M,4M+1,9M+7"
kinds="DD,DV,VD,VV,DH,HD,MD,DM"
out=$(run "pods, scheduler's choice" -n 2 --gpus "$G" -- "$T/p2p_basic" --kinds $kinds --sizes "$sizes,64M+7")
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" || fail "pods: cuda-vmm-stage carried nothing"
grep -q "stats: channels: .*cuda-vmm-zc" <<<"$out" || fail "pods: exportable buffers did not go zero-copy"
grep -q "stats: channels: .*cuda-ipc" <<<"$out" && fail "pods: legacy IPC used across PID namespaces"
# One GPU shared by the pods: the pair's driver (rank 0) makes every copy of a ping-pong, so the
# other pod's process puts no copy on the GPU (exportable buffers, and cudaMalloc from the heap).
if [ "$G" = "0;0" ]; then
  for k in V D; do
    # (away from any MPS daemon: under MPS both processes copy, as between two GPUs)
    out=$(CGDR_STATS=1 timeout 120 "$PODS" -n 2 --gpus "$G" -x CUDA_MPS_PIPE_DIRECTORY=/nonexistent/cgdr-no-mps -- \
          "$BIN/tools/cgdr-bench/cgdr-bench" \
          latency $k $k -m 1:4M -i 50:10 -x 5:2 -c 2>&1)
    rc=$?
    [ $rc -eq 0 ] && grep -q " Pass" <<<"$out" && ! grep -q "FAIL" <<<"$out" ||
      fail "pods, one GPU ($k $k): exit $rc, $(grep -E 'FAIL|rror' <<<"$out" | head -3)"
    echo "step 'pods, one GPU, the driver copies ($k $k)'" >&2
    grep -E "stats: (channels|GPU copies)" <<<"$out" >&2
    grep -q ":0 cgdr WARN shm: stats: GPU copies" <<<"$out" || fail "pods, one GPU: rank 0 made no copy ($k $k)"
    grep -q ":1 cgdr WARN shm: stats: GPU copies" <<<"$out" && fail "pods, one GPU: rank 1 copied ($k $k)"
  done
fi
# Stream-ordered pool memory has neither a legacy handle nor an fd: through the sender's staging
# ring (or host staging), to and from every other kind, also freed and allocated again.
out=$(run "pods, pool memory" -n 2 --gpus "$G" -- "$T/p2p_basic" --kinds AA,AD,DA,AV,VA,AM --sizes "$sizes")
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" || fail "pods: pool memory did not take the staging ring"
run "pods, pool memory freed and re-allocated" -n 2 --gpus "$G" -- "$T/gpu_realloc" --kinds AA,AV,DA > /dev/null
out=$(run "pods, small device messages" -n 2 --gpus "$G" -- "$T/p2p_basic" --kinds DD --sizes 1,3,4K)
grep -q "stats: channels: .*shm-eager" <<<"$out" || fail "pods: small device messages were not staged through host memory"
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" && fail "pods: small device messages took the cuMem ring"
# Exportable buffers: small messages rendezvous instead of host staging (only buffered sends,
# copied to host memory by MPI_Bsend/Ibsend, 2 sizes x 2 variants, stay eager); a cudaMalloc
# source reaches an exportable destination with one copy, pushed by the sender; with
# CGDR_CUDA_PUSH=off the receiver pulls from exportable sources only.
out=$(run "pods, small exportable messages" -n 2 --gpus "$G" -- "$T/p2p_basic" --kinds VV --sizes 3,4K+5)
# Both ranks' counts (a pull is counted by the receiver, a push into an advertised receive by the
# sender).
line=$(grep "stats: channels:" <<<"$out" | tr '\n' ' ')
eager=$(grep -o "shm-eager [0-9]*" <<<"$line" | awk '{s += $2} END {print s}')
zc=$(grep -o "cuda-vmm-zc [0-9]*" <<<"$line" | awk '{s += $2} END {print s}')
[ "${zc:-0}" -ge 28 ] && [ "${eager:-0}" -le 8 ] ||
  fail "pods: small exportable messages were staged through host memory ($line)"
# Receives posted first into exportable buffers are advertised across the pods and claimed by the
# sender (MPI's matching rules checked by the program either way).
out=$(run "pods, receives posted first" -n 2 --gpus "$G" -- "$T/gpu_advert" --kinds VV,DV,VD,DD,HV \
      --sizes 1,4095,256K+1,1M+1)
grep -q "adverts: [0-9]* receives advertised, [1-9][0-9]* claimed by their sender" <<<"$out" ||
  fail "pods: no advertised receive was claimed across the pods"
# Windows of small messages across the pods (receives posted first, one way and both ways): pushes
# and pulls moved together by the copy kernel, into and out of memory mapped from the other pod's
# GPU, every byte checked at odd offsets, nothing written between the messages.
out=$(run "pods, windows by the copy kernel" -n 2 --gpus "$G" -- "$T/gpu_window" --kinds DD,VV,DV \
      --sizes 1,17,4095,64K+1,200K+3 --rounds 2)
grep -q "by the copy kernel [1-9][0-9]* in [1-9][0-9]* launches ([1-9][0-9]* held pushes" <<<"$out" ||
  fail "pods: the copy kernel moved no held push across the pods"
# The same with every message pulled by its receiver (CGDR_CUDA_PUSH=off): the pulls one progress
# step finds are held and moved together, out of memory mapped from the other pod's GPU.
out=$(run "pods, pulls by the copy kernel" -n 2 --gpus "$G" -x CGDR_CUDA_PUSH=off -- "$T/gpu_window" \
      --kinds DD,VV --sizes 1,17,4095,64K+1,200K+3 --rounds 1)
grep -q "by the copy kernel [1-9][0-9]* in [1-9][0-9]* launches (0 held pushes, [1-9][0-9]* held pulls" <<<"$out" ||
  fail "pods: the copy kernel moved no held pull across the pods"
# Both directions at once above CGDR_CUDA_PULL_LIMIT: each message copied by its sender, into an
# advertised receive or after the envelope (else one GPU drives both directions); pulls are
# counted into GPU buffers only (the program's GPU message into a host buffer is pulled). (On one
# GPU the pair's driver would make every copy: turned off here.)
out=$(run "pods, both ways above the pull limit" -n 2 --gpus "$G" -x CGDR_CUDA_SAME_GPU_DRIVER=0 -- "$T/gpu_advert" \
      --kinds VV,DD --sizes 3M+5,9M+7)
grep -q "pushed [1-9]" <<<"$out" && ! grep -q "pulled [1-9]" <<<"$out" ||
  fail "pods: messages above the pull limit were pulled: $(grep -o 'GPU buffers.*pulled [0-9]*' <<<"$out" | tr '\n' ' ')"
out=$(run "pods, cudaMalloc to exportable" -n 2 --gpus "$G" -- "$T/p2p_basic" --kinds DV --sizes "256K+1,1M+1,9M+7")
grep -q "pushed [1-9]" <<<"$out" || fail "pods: a cudaMalloc source was not pushed into an exportable destination"
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" && fail "pods: D to V took two copies (cuda-vmm-stage)"
# The host rail across pods (each sees only its own GPU: the sender pushes through the imported
# cuMem mapping while the tail goes through the host chunks), a 0.37 share beyond 1 MiB; on one
# GPU there is no second link and no rail.
out=$(run "pods, host rail" -n 2 --gpus "$G" -x CGDR_CUDA_HOST_RAIL_SHARE_INVISIBLE=0.37 -x CGDR_CUDA_HOST_RAIL_OFFSET=1M -x CGDR_CUDA_HOST_RAIL_OFFSET_BW=1M -x CGDR_CUDA_HOST_RAIL_MIN_BW=1M -- \
      "$T/p2p_basic" --kinds VV,DV,VD,DD --sizes "1M+1,1M+256K+3,3M+5,9M+7")
if [ "$G" = "0;1" ]; then
  grep -q "host rail: [1-9]" <<<"$out" || fail "pods: no message took the host rail"
else
  ! grep -q "host rail:" <<<"$out" || fail "pods: a host rail between two pods on one GPU"
fi
out=$(run "pods, pull only" -n 2 --gpus "$G" -x CGDR_CUDA_PUSH=off -- "$T/p2p_basic" --kinds VV,VD,DV --sizes "$sizes")
grep -q "pushed [1-9]" <<<"$out" && fail "pods: CGDR_CUDA_PUSH=off still pushed"
grep -q "stats: channels: .*cuda-vmm-zc" <<<"$out" || fail "pods: pulls from exportable buffers did not go zero-copy"
out=$(run "pods, push always" -n 2 --gpus "$G" -x CGDR_CUDA_PUSH=always -- "$T/p2p_basic" --kinds VV,DV,VD --sizes "$sizes")
grep -q "pushed [1-9]" <<<"$out" || fail "pods: CGDR_CUDA_PUSH=always did not push"
# Lone small copies between the pods' GPUs taken by the resident copy kernel (CGDR_CUDA_RESIDENT=
# auto; the peer's cuMem memory, mapped for this GPU): byte-exact, started again after each pause
# between sizes (two launches at least), and telling the receiving pod itself (a word in its
# segment, mapped for this pod's GPU: some receives end that way); never where both pods use one
# GPU (it would hold it from the other's work).
out=$(run "pods, resident copy kernel" -n 2 --gpus "$G" -x CGDR_CUDA_RESIDENT=auto -- "$T/gpu_resident" --kinds VV,VD,DV,DD \
      --sizes "1,3,8,17,4095,4096,4097" --pause-us 2000)
if [ "$G" = "0;1" ]; then
  grep -qE "by the resident kernel [1-9][0-9]* in ([2-9]|[1-9][0-9]+) launches" <<<"$out" ||
    fail "pods: the resident copy kernel: $(grep -o 'by the resident kernel [^(]*' <<<"$out" | sort -u | tr '\n' ' ')"
  grep -qE "\([1-9][0-9]* ended by a word its GPU set\)" <<<"$out" ||
    fail "pods: no receive ended by the word the resident kernel sets: $(grep -o 'claimed by their sender ([^)]*)' <<<"$out" | tr '\n' ' ')"
else
  ! grep -q "by the resident kernel [1-9]" <<<"$out" || fail "pods: a resident copy kernel on a shared GPU"
fi
# Each cross-namespace channel forced; where it can carry every device message (the host pipeline,
# the staging ring) no other GPU channel may carry one, receives posted first included.
for ch in host-pipeline cuda-vmm-stage cuda-vmm-zc; do
  out=$(run "pods, $ch forced" -n 2 --gpus "$G" -x CGDR_FORCE_CHANNEL=$ch -- \
    "$T/p2p_basic" --kinds $kinds --sizes $sizes)
  grep -q "stats: channels: .*$ch" <<<"$out" || fail "pods, $ch forced: it carried nothing"
  others="cuda-vmm-zc"; [ $ch = host-pipeline ] && others="cuda-"
  [ $ch = cuda-vmm-zc ] || ! grep -q "stats: channels: .*$others" <<<"$out" ||
    fail "pods, $ch forced: $(grep -o "stats: channels: .*" <<<"$out" | sort -u | tr '\n' ' ')"
done
# The two staged channels at the smallest geometry their settings take (a staging ring of two 64 KiB
# blocks; two host chunks of 4 KiB): messages of many blocks, sizes on and beside the blocks' ends.
small="0,1,4095,4096,4097,64K-1,64K,64K+1,128K+3,1M+5"
out=$(run "pods, staging ring at its smallest" -n 2 --gpus "$G" -x CGDR_FORCE_CHANNEL=cuda-vmm-stage \
  -x CGDR_CUDA_BLOCK_SIZE=64K -x CGDR_CUDA_STAGE_SLOTS=2 -- "$T/p2p_basic" --kinds DD,DV,DH,HD --sizes $small)
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" || fail "pods, smallest staging ring: it carried nothing"
grep -q "is not valid" <<<"$out" &&
  fail "pods, smallest staging ring: $(grep -o "[A-Z_]*='[^']*' is not valid" <<<"$out")"
out=$(run "pods, host chunks at their smallest" -n 2 --gpus "$G" -x CGDR_FORCE_CHANNEL=host-pipeline \
  -x CGDR_SHM_CHUNK_BYTES=4K -x CGDR_SHM_CHUNKS=2 -- "$T/p2p_basic" --kinds DD,DV,DH,HD --sizes $small)
grep -q "stats: channels: .*host-pipeline" <<<"$out" || fail "pods, smallest host chunks: the pipeline carried nothing"
grep -q "is not valid" <<<"$out" &&
  fail "pods, smallest host chunks: $(grep -o "[A-Z_]*='[^']*' is not valid" <<<"$out")"
# The host chunks are page-locked at a pair's first GPU message, across namespaces too: here no
# message goes through them (exportable buffers, cuda-vmm-zc forced; small sizes, so that
# p2p_basic's own host messages, which cannot use CMA across PID namespaces, stay eager), yet
# each rank page-locks its own region and its peer's.
out=$(run "pods, host chunks page-locked early" -n 2 --gpus "$G" -x CGDR_FORCE_CHANNEL=cuda-vmm-zc -- \
  "$T/p2p_basic" --kinds VV --sizes "1,4095")
grep -q "stats: channels: .*host-pipeline" <<<"$out" && fail "pods, page-locked early: a message took the host pipeline"
for r in 0 1; do
  grep -qE "^pod$r:[0-9]+:$r cgdr WARN shm: stats: host chunks page-locked for GPU copies: 2 regions" <<<"$out" ||
    fail "pods, page-locked early: rank $r: $(grep -o 'page-locked for GPU copies: .*' <<<"$out" | tr '\n' ' ')"
done
run "pods, stress with device buffers" -n 2 --gpus "$G" -- "$T/stress" --seed 11 --rounds 10 --kinds DD,DH,HD > /dev/null
run "pods, freed and re-allocated buffers" -n 2 --gpus "$G" -- "$T/gpu_realloc" --kinds DD,VV,VD > /dev/null
# Two pods of two ranks each, one communicator of four: every rank has a peer in its own pod (one
# PID namespace: legacy CUDA IPC) and two in the other (cuMem fds only), so one rank's GPU messages
# take a channel per peer class, wildcard receives match across both classes, and collectives mix
# them. The two ranks of a pod share its GPU (on one GPU all four do: each pair's lower rank
# drives, and a rank drives one pair while it is driven in another). Data checked by the programs.
out=$(run "pods, 2 pods x 2 ranks, stress" -n 2 -r 2 --gpus "$G" -- "$T/stress" --seed 13 --rounds 12 --kinds DD,VV,DV)
grep -q "stats: channels: .*cuda-ipc" <<<"$out" || fail "2 pods x 2 ranks: no legacy IPC within a pod"
grep -q "stats: channels: .*cuda-vmm-zc" <<<"$out" || fail "2 pods x 2 ranks: exportable buffers did not go zero-copy"
run "pods, 2 pods x 2 ranks, ordering and wildcards" -n 2 -r 2 --gpus "$G" -- "$T/p2p_order" --kinds DD,VV,HD > /dev/null
run "pods, 2 pods x 2 ranks, collectives" -n 2 -r 2 --gpus "$G" -- "$T/coll_blocking" --kinds DD,VV --max-count 4095 > /dev/null
# A fresh exportable buffer per message, freed after it: the peer drops its mapping of each freed
# one instead of holding its GPU memory until MPI_Finalize.
out=$(run "pods, freed exportable buffers released" -n 2 --gpus "$G" -- "$T/gpu_realloc" --kinds VV --rounds 40)
grep -q "peers' cuMem memory: [0-9] mappings held at exit, [1-9][0-9]* dropped when freed" <<<"$out" ||
  fail "pods: mappings of freed exportable buffers were kept: $(grep "peers' cuMem" <<<"$out" | head -2)"
# cudaMalloc of a program linked with the shared CUDA runtime: across PID namespaces auto serves it
# from the exportable heap, so device messages go zero-copy (not staged); =off keeps the runtime's.
out=$(run "pods, cudaMalloc from the exportable heap" -n 2 --gpus "$G" -- "$T/gpu_heap" --expect heap)
grep -q "stats: channels: .*cuda-vmm-zc" <<<"$out" || fail "pods: heap buffers did not go zero-copy"
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" && fail "pods: heap buffers took the staging ring"
grep -q "stats: exportable heap: [1-9]" <<<"$out" || fail "pods: the heap served no cudaMalloc"
out=$(run "pods, cudaMalloc heap off" -n 2 --gpus "$G" -x CGDR_CUDA_MALLOC=off -- "$T/gpu_heap" --expect real)
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" || fail "pods: CGDR_CUDA_MALLOC=off did not stage"
# cudaMallocAsync of such a program: pool memory has no handle at all; auto serves it from the
# heap too (stream order kept), so it goes zero-copy; =off leaves it to the pool (staging ring).
out=$(run "pods, cudaMallocAsync from the exportable heap" -n 2 --gpus "$G" -- "$T/gpu_heap" --alloc async --expect heap)
grep -q "stats: channels: .*cuda-vmm-zc" <<<"$out" || fail "pods: cudaMallocAsync buffers did not go zero-copy"
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" && fail "pods: cudaMallocAsync buffers took the staging ring"
grep -q "stats: exportable heap: [0-9]* cudaMalloc served, [1-9]" <<<"$out" || fail "pods: the heap served no cudaMallocAsync"
# Copies from pageable memory still landing when MPI reads heap buffers across the pods: the
# heap's cuMem memory takes no SYNC_MEMOPS mark, so the context must be flagged instead.
out=$(run "pods, MPI right after cudaMemcpy, heap buffers" -n 2 --gpus "$G" -- "$T/gpu_sync_heap" --kinds DD,DH,AD,DA)
grep -q "SYNC_MEMOPS not set" <<<"$out" && fail "pods: neither the SYNC_MEMOPS mark nor the context flag was set"
grep -q "stats: exportable heap: [1-9][0-9]* cudaMalloc served, [1-9]" <<<"$out" || fail "pods: gpu_sync_heap's buffers not from the heap"
out=$(run "pods, cudaMallocAsync heap off" -n 2 --gpus "$G" -x CGDR_CUDA_MALLOC_ASYNC=off -- "$T/gpu_heap" --alloc async --expect real)
grep -q "stats: channels: .*cuda-vmm-stage" <<<"$out" || fail "pods: CGDR_CUDA_MALLOC_ASYNC=off did not stage"
# A Python program (mpi4py) with CuPy arrays and PyTorch tensors, through the interpreter the build
# found with either of them (tests/mpi/mpi4py-python: the interpreter, then its libraries): their
# allocators' cudaMalloc comes from the exportable heap too. Each of those libraries must pass.
py="" libs=""
[ -s "$BIN/tests/mpi/mpi4py-python" ] && { read -r py; read -r libs; } < "$BIN/tests/mpi/mpi4py-python"
if [ -n "$py" ]; then
  prog=$(cd "$(dirname "$0")/../mpi" && pwd)/mpi4py_buffers.py
  out=$(run "pods, mpi4py with $libs" -n 2 --gpus "$G" -- "$py" "$prog" --libs "$libs" --sizes 0,1,3,8K+1,1M+1,9M+7)
  grep -q "^PASS mpi4py_buffers $libs" <<<"$out" || fail "pods, mpi4py: not every one of $libs passed"
  grep -q "stats: channels: .*cuda-vmm" <<<"$out" || fail "pods, mpi4py: the cuMem channels were not used"
  grep -q "stats: channels: .*cuda-ipc" <<<"$out" && fail "pods, mpi4py: legacy IPC across PID namespaces"
else
  echo "note: no python3 with mpi4py and CuPy or PyTorch found at configure time: pods mpi4py step skipped" >&2
fi
# cudaDeviceReset by the program across the pods (its cudaMalloc served by the exportable heap
# there): before any GPU message, between them (GPU buffers refused after it) and before MPI_Finalize;
# and in one pod only, its host buffers against the other pod's GPU buffers after it.
for at in start middle end; do
  run "pods, cudaDeviceReset at $at" -n 2 --gpus "$G" -- "$T/gpu_reset" --at $at --kinds DD,DH,VV \
    --sizes 0,1,4097,1M+1,9M+7 > /dev/null
done
run "pods, cudaDeviceReset in one pod" -n 2 --gpus "$G" -- "$T/gpu_reset" --at middle --one 1 --kinds DD,VV \
  --sizes 0,1,4097,1M+1,9M+7 > /dev/null
# The same two through a statically linked runtime (cgdr finds the reset afterwards).
run "pods, static runtime's cudaDeviceReset at middle" -n 2 --gpus "$G" -- "$T/gpu_reset_static" --at middle \
  --kinds DD,DH,VV --sizes 0,1,4097,1M+1,9M+7 > /dev/null
run "pods, static runtime's cudaDeviceReset in one pod" -n 2 --gpus "$G" -- "$T/gpu_reset_static" --at middle \
  --one 1 --kinds DD,VV --sizes 0,1,4097,1M+1,9M+7 > /dev/null
# And through the driver (cuDevicePrimaryCtxReset) in a program on the shared runtime: found
# afterwards too, while the exportable heap still served its cudaMalloc. (The heap's part is not
# shown by this step: on the H200 it passed with the heap unaware of the reset as well.)
run "pods, cuDevicePrimaryCtxReset at middle" -n 2 --gpus "$G" -- "$T/gpu_reset" --how driver --at middle \
  --kinds DD,DH,VV --sizes 0,1,4097,1M+1,9M+7 > /dev/null
run "pods, cuDevicePrimaryCtxReset in one pod" -n 2 --gpus "$G" -- "$T/gpu_reset" --how driver --at middle \
  --one 1 --kinds DD,VV --sizes 0,1,4097,1M+1,9M+7 > /dev/null
# A context of the program's own (cuCtxCreate) holding its GPU work, destroyed between messages.
run "pods, cuCtxDestroy of the program's context at middle" -n 2 --gpus "$G" -- "$T/gpu_reset" --how destroy \
  --at middle --kinds DD,DH,VV --sizes 0,1,4097,1M+1,9M+7 > /dev/null
# A context of the program's own beside the primary one: GPU messages in the primary context, then
# in the program's (buffers allocated with it current), then after it was destroyed (gpu_contexts.cc).
run "pods, the program's own context beside the primary one" -n 2 --gpus "$G" -- "$T/gpu_contexts" \
  --kinds DD,DH,HD,VV,AA --sizes 0,1,4097,1M+1,9M+7 > /dev/null
# Pods that see both GPUs (in turned order), each rank's buffers on both in turn (gpu_devices.cc).
if [ "$ngpu" -ge 2 ]; then
  run "pods seeing both GPUs, buffers on each in turn" -n 2 --gpus "0,1;1,0" -- "$T/gpu_devices" \
    --kinds DD,DH,HD,VV --sizes 0,1,4097,1M+1,9M+7 > /dev/null
else
  echo "note: one GPU: the pods step with buffers on two GPUs in turn skipped" >&2
fi
# Private IPC namespaces and /dev/shm: the cuMem link's sockets live in the shared directory.
shared=$(mktemp -d /tmp/cgdr-gpu-pods.XXXXXX)
out=$(run "pods, private IPC, shared dir" -n 2 --private-ipc --shared-dir "$shared" --gpus "$G" -- \
      "$T/p2p_basic" --kinds DD,VV --sizes 1,1M+1,9M+7)
grep -q "stats: channels: .*cuda-vmm" <<<"$out" || fail "private IPC: the cuMem channels were not used"
[ -z "$(leftovers "$shared")" ] || fail "files left in the shared directory: $(leftovers "$shared")"
rm -rf "$shared"
# Pods in the host's network namespace (docker --network=host): still separate PID namespaces, so
# the same cuMem channels (legacy IPC refused), whatever the network.
out=$(run "pods, host network" -n 2 --shared-net --gpus "$G" -- "$T/p2p_basic" --kinds DD,VV --sizes 1,1M+1,9M+7)
grep -q "stats: channels: .*cuda-vmm" <<<"$out" || fail "host network: the cuMem channels were not used"
grep -q "stats: channels: .*cuda-ipc" <<<"$out" && fail "host network: legacy IPC across PID namespaces"
[ -z "$(leftovers /dev/shm)" ] || fail "files left in /dev/shm: $(leftovers /dev/shm)"
finish
