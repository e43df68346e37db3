#!/usr/bin/env bash
# The check to run on a machine with an NVIDIA GPU (an H200 was the target), as is:
# the GPU tests through CUDA (op table, random graphs, eager and lazy devices, LeNet
# training), LeNet trained for one epoch on the GPU, then the step benchmark: braze's GPU
# backend beside PyTorch eager and torch.compile on the same GPU. Needs
# `pip install -e '.[test,cuda]'`, and PyTorch with CUDA in $BRAZE_PEERS_PYTHON (else in
# this python).
set -euo pipefail
cd "$(dirname "$0")/.."
export BRAZE_GPU_RUNTIME=cuda
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python -m pytest -q tests/backends/test_gpu_*.py
braze train lenet --device gpu:lazy --epochs 1
braze train lenet --device gpu --steps-per-epoch 20
python benchmarks/bench_step.py --device gpu --json runs/bench-step-gpu.json
