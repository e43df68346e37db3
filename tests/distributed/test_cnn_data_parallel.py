"""Keras-style ``fit`` data-parallel across 2 MPI ranks: ``train_cnn`` (augmentation, Adam)
on 2 ranks x batch 4 ends 2 epochs with the parameters of 1 process x batch 8, and every
rank's History holds the whole job's epochs, as one process's does."""

from __future__ import annotations

import json

import numpy as np
from cnn_fit import image_folder, train
from mpi import run

from braze.data import make_two_class_folder


def test_two_ranks_fit_the_cnn_as_one_process_with_twice_the_batch(tmp_path):
    data = image_folder(tmp_path / "images")
    done, _ = run(2, "run_cnn.py", str(data), str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    # Rank 0 alone prints the epochs.
    assert done.stdout.count("Epoch 1/2 - ") == 1 and done.stdout.count("Epoch 2/2 - ") == 1, done.stdout
    expected, history = train(data)
    for rank in range(2):
        logs = json.loads((tmp_path / f"history-{rank}.json").read_text())
        # Summed over the ranks, the statistics are the whole epoch's: 16 training images, and
        # 9 validation images of which rank 0 has 5 and rank 1 has 4. They are kept in float32,
        # summed in another order on the ranks: a few float32 roundings apart.
        for name in ("loss", "accuracy", "val_loss", "val_accuracy"):
            np.testing.assert_allclose(logs[name], history[name], rtol=1e-6, err_msg=f"rank {rank} {name}")
        params = dict(np.load(tmp_path / f"params-{rank}.npz"))
        for name, value in expected.items():
            # float64 (see cnn_fit.py): Adam moves a parameter by at most lr = 1e-3 a step, and
            # rounding changes that step by its relative size, 1e-16 times the condition of the
            # gradient's sum; even a sum that cancels to 1e-6 of its terms leaves 4 steps within
            # 1e-12 (the runs measured 2e-15 apart under every BLAS kernel). A mistake of the
            # ranks (a wrong mean, a row in two shards) moves parameters by 1e-5 and more.
            np.testing.assert_allclose(params[name], value, rtol=0, atol=1e-9, err_msg=f"rank {rank} {name}")


def test_ranks_with_a_batch_more_or_less_take_the_same_steps_and_stop_together(tmp_path):
    """9 images in batches of 2 x 4: the last batch's one image is rank 0's alone. Each step
    averages gradients over both ranks, so rank 0 stepping on it alone would wait forever:
    both ranks take the one step they share, with or without steps_per_epoch. Data without
    a length needs steps_per_epoch; rank 0 may evaluate on its own; a callback stopping
    rank 0 alone stops both."""
    train, _ = make_two_class_folder(tmp_path / "images", 9, 2, size=(8, 8))
    done, _ = run(2, "run_uneven_fit.py", str(train), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    for steps in ("None", "2"):
        assert f"rank 0: 2 batches, steps_per_epoch {steps}: 1 steps" in done.stdout, done.stdout
        assert f"rank 1: 1 batches, steps_per_epoch {steps}: 1 steps" in done.stdout, done.stdout
    assert done.stdout.count("needs steps_per_epoch, so that every rank takes as many steps") == 2, done.stdout
    assert "rank 0 evaluated alone: " in done.stdout, done.stdout
    assert "rank 0: 1 epochs" in done.stdout and "rank 1: 1 epochs" in done.stdout, done.stdout
