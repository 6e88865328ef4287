#!/usr/bin/env bash
# The CUDA backend's checks on a machine with an NVIDIA GPU, as one step
# (issue 15; README.md beside this file says what they verify).  Needs nvcc,
# a CUDA driver and the Python test dependencies (pip install ".[test]").
#
#   bench/cuda/run_on_gpu.sh [MODEL]     MODEL: for adil bench (default gemma3-270m)
#
# Writes everything it prints to build-gpu/run_on_gpu.log as well; the
# figures belong in bench/RESULTS.md.
set -uo pipefail
cd "$(dirname "$0")/../.."
model=${1:-gemma3-270m}
mkdir -p build-gpu
exec > >(tee build-gpu/run_on_gpu.log) 2>&1
status=0
step() { echo "== $*"; "$@" || { echo "!! failed ($?): $*"; status=1; }; }

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
nvcc --version | tail -1
# native: the GPU's own architecture (the default list may lack it)
step cmake -S . -B build-gpu -G Ninja -DADIL_CUDA=ON -DADIL_WERROR=ON -DADIL_BUILD_TESTS=ON \
  -DCMAKE_CUDA_ARCHITECTURES=native
step cmake --build build-gpu -j"$(nproc)"
export PYTHONPATH="$PWD/src" ADIL_LIBRARY_DIR="$PWD/build-gpu/lib"
step python3 -m adil info
# The kernels against the CPU reference: must pass, not skip, here.
step ctest --test-dir build-gpu --output-on-failure -R cuda -O build-gpu/ctest-cuda.log
if grep -q "Skipped" build-gpu/ctest-cuda.log; then
  echo "!! a CUDA test skipped on a GPU machine (its reason is above)"; status=1
fi
# Selection, and the parity tests (they skip while the forward pass is missing).
step python3 -m pytest -p no:cacheprovider -rs tests/test_cuda_backend.py
# adil bench on cuda: refused until the CUDA forward pass exists; the CPU for comparison.
step python3 -m adil bench --model "$model" --backend cuda --json
step python3 -m adil bench --model "$model" --backend cpu --threads "$(nproc)" --json
exit $status
