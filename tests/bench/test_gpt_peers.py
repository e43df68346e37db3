"""The GPT benchmark's peers start where braze starts: the same weights and the same tokens
(benchmarks/peers/gpt_common.py, NumPy only, against braze's own recipe)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from braze.bench.steps import GPT_CONFIGS, gpt_batch
from braze.models.gpt_config import initial_state

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from peers import gpt_common  # noqa: E402


@pytest.mark.parametrize("name", ["gpt", "gpt-wide"])
def test_the_peers_weights_and_tokens_are_braze_s(name):
    config, batch = GPT_CONFIGS[name]
    spec = gpt_common.spec(name)
    assert (spec.block_size, spec.n_layer, spec.n_head, spec.n_embd, spec.batch, spec.vocab_size) == (
        config.block_size,
        config.n_layer,
        config.n_head,
        config.n_embd,
        batch,
        config.vocab_size,
    )
    ours, theirs = initial_state(config, seed=0), gpt_common.init_params(name)
    assert list(ours) == list(theirs)
    for key in ours:
        np.testing.assert_array_equal(theirs[key], ours[key], err_msg=key)
    for a, b in zip(gpt_batch(config, batch, seed=0), gpt_common.make_batch(name), strict=True):
        np.testing.assert_array_equal(a, b)
