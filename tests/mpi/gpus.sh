# Sourced by the GPU test scripts: visible_gpus prints how many GPUs this process's CUDA sees
# (CUDA_VISIBLE_DEVICES' entries where it is set, which run-mpi.sh passes on to the ranks; else
# every GPU nvidia-smi lists; 0 without nvidia-smi).
visible_gpus() {
  local n=0
  if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
    n=$(tr ',' '\n' <<<"$CUDA_VISIBLE_DEVICES" | grep -c .)
  elif command -v nvidia-smi > /dev/null; then
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  fi
  echo "${n:-0}"
}
