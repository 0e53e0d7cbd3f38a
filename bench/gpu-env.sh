# Sourced by the GPU benchmark scripts after they set $build and $out: the environment every run
# on the GPU machine needs (no NVLink multicast; Open MPI as root) and the programs they start.
mkdir -p "$out"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
b=$build/tools/cgdr-bench/cgdr-bench
lib=$build/src/libcgdr.so
pods=$build/bin/cgdr-pods
