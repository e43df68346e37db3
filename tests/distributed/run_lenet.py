"""Run under ``mpiexec -n 2``: 20 data-parallel LeNet steps in MODE; each rank writes its
parameters to OUT/params-<rank>.npz.  Usage: run_lenet.py MODE OUT"""

import sys

import numpy as np
from lenet_steps import train

import braze.distributed as dist

mode, out = sys.argv[1], sys.argv[2]
dist.init()
params = train(mode, dist.size(), dist.DistributedOptimizer)
np.savez(f"{out}/params-{dist.rank()}.npz", **params)
