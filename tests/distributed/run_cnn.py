"""Run under ``mpiexec -n 2``: the data-parallel ``train_cnn`` of cnn_fit.py on the image
folder DATA; each rank writes its parameters to OUT/params-<rank>.npz and its History to
OUT/history-<rank>.json.  Usage: run_cnn.py DATA OUT"""

import json
import sys
from pathlib import Path

import numpy as np
from cnn_fit import train

import braze.distributed as dist

data, out = Path(sys.argv[1]), Path(sys.argv[2])
dist.init()
params, history = train(data, distributed=True)
np.savez(out / f"params-{dist.rank()}.npz", **params)
(out / f"history-{dist.rank()}.json").write_text(json.dumps(history))
