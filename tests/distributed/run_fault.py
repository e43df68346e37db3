"""Run under ``mpiexec -n 2``: both ranks run jitted steps that all-reduce; at the sixth,
rank 1 raises (``raise``) or kills itself with SIGKILL (``kill``) while rank 0 goes on to
wait for it inside the compiled step.  Usage: run_fault.py raise|kill"""

import os
import signal
import sys

import numpy as np

import braze
import braze.distributed as dist

dist.init()
step = braze.jit(lambda a: dist.all_reduce(a * 0.5, "sum"))
x = braze.tensor(np.ones(1000, np.float32), device=braze.LAZY_CPU)
for i in range(1_000_000):
    if i == 5 and dist.rank() == 1:
        if sys.argv[1] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        raise RuntimeError("rank 1 gives up")
    x = step(x)
