# Sourced by the GPU benchmark scripts after they set $build and $out: the environment every run
# on the GPU machine needs (no NVLink multicast; Open MPI as root) and the programs they start.
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
b=$build/tools/cgdr-bench/cgdr-bench
lib=$build/src/libcgdr.so
pods=$build/bin/cgdr-pods
# The GPU layout: one GPU per rank/pod ("0;1") where two exist; on a machine of one GPU both
# share it ("0;0") and the floor is a copy within that GPU.
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
gpus="0;1" gpusall="0,1;1,0" floorargs=(--from 0 --to 1)
if [ "${ngpu:-0}" -lt 2 ]; then
  gpus="0;0" gpusall="" floorargs=(--from 0 --to 0)
fi
