#!/usr/bin/env bash
# The check to run on a machine with an NVIDIA GPU (an H200 was the target), as is:
# the GPU tests through CUDA (op table, random graphs, eager and lazy devices), then LeNet
# trained for one epoch on the GPU. Needs `pip install -e '.[test,cuda]'`.
set -euo pipefail
cd "$(dirname "$0")/.."
export BRAZE_GPU_RUNTIME=cuda
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
python -m pytest -q tests/backends/test_gpu_ops.py tests/backends/test_gpu_random_graphs.py tests/backends/test_gpu_devices.py
braze train lenet --device gpu:lazy --epochs 1
braze train lenet --device gpu --steps-per-epoch 20
# Not yet: benchmarks/bench_step.py has no --device gpu (braze on the GPU beside PyTorch
# eager and torch.compile on the same GPU); it is the next step of issue 13.
