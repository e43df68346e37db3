"""Data parallelism across 2 MPI ranks: 2 ranks x batch 64 end 20 LeNet SGD steps with the
parameters of 1 process x batch 128 (float32, relative 1e-5), eagerly, lazily and jitted."""

from __future__ import annotations

import numpy as np
import pytest
from lenet_steps import MODES, train
from mpi import run


@pytest.mark.parametrize("mode", MODES)
def test_two_ranks_train_lenet_as_one_process_with_twice_the_batch(mode, tmp_path):
    done, _ = run(2, "run_lenet.py", mode, str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    ranks = [dict(np.load(tmp_path / f"params-{r}.npz")) for r in range(2)]
    expected = train(mode, 1)
    for name, value in expected.items():
        np.testing.assert_array_equal(ranks[1][name], ranks[0][name], err_msg=f"{name}: the ranks differ")
        scale = np.abs(value).max()
        error = np.abs(ranks[0][name] - value).max() / scale
        assert error <= 1e-5, f"{mode} {name}: relative difference {error:.2e} from one process x batch 128"
