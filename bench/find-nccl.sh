#!/usr/bin/env bash
# Prints the path of the NCCL library (libnccl.so.2) the comparison should load, or nothing with
# exit status 1: $CGDR_BENCH_NCCL_LIB where set; else PyTorch's (the nvidia-nccl pip package: the
# NCCL that PyTorch users on the machine run); else the dynamic loader's; else the CUDA toolkit's.
if [ -n "${CGDR_BENCH_NCCL_LIB:-}" ]; then
  [ -e "$CGDR_BENCH_NCCL_LIB" ] && { echo "$CGDR_BENCH_NCCL_LIB"; exit 0; }
  exit 1
fi
for py in python3 python; do
  command -v "$py" > /dev/null || continue
  p=$("$py" - 2>/dev/null <<'PY'
import importlib.util, os
spec = importlib.util.find_spec("nvidia.nccl")
for d in (spec.submodule_search_locations or []) if spec else []:
    f = os.path.join(d, "lib", "libnccl.so.2")
    if os.path.exists(f):
        print(f)
        break
PY
)
  [ -n "$p" ] && { echo "$p"; exit 0; }
done
p=$(ldconfig -p 2>/dev/null | awk '/libnccl\.so\.2 /{print $NF; exit}')
[ -n "$p" ] && [ -e "$p" ] && { echo "$p"; exit 0; }
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/lib/x86_64-linux-gnu; do
  [ -e "$d/libnccl.so.2" ] && { echo "$d/libnccl.so.2"; exit 0; }
done
exit 1
