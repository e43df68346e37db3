"""keras.random against the distributions it names (sample moments within several standard
errors, bounds, frequencies), its seeds (a SeedGenerator moves on, an int repeats), and a
Keras 3 GAN-style model that defines only train_step, fitted eagerly and compiled."""

from __future__ import annotations

import numpy as np
import pytest

import braze as tf
from braze import keras

N = 200_000  # samples: a mean's standard error is 1/sqrt(N) of the deviation, 0.0022


def test_normal_uniform_and_truncated_normal_have_their_moments_and_bounds():
    seeds = keras.random.SeedGenerator(3)
    normal = keras.random.normal((N,), mean=2.0, stddev=3.0, seed=seeds).numpy().astype(np.float64)
    assert abs(normal.mean() - 2.0) < 5 * 3.0 / np.sqrt(N) and abs(normal.std() - 3.0) < 0.05
    uniform = keras.random.uniform((N,), minval=-1.0, maxval=3.0, seed=seeds).numpy()
    assert uniform.min() >= -1.0 and uniform.max() < 3.0 and abs(uniform.mean() - 1.0) < 5 * 4 / np.sqrt(12 * N)
    truncated = keras.random.truncated_normal((N,), stddev=2.0, seed=seeds).numpy().astype(np.float64)
    # a normal cut at two deviations keeps a deviation of 0.8796 of the uncut one
    assert np.abs(truncated).max() <= 4.0 and abs(truncated.std() - 2 * 0.8796) < 0.02
    ints = keras.random.randint((N,), 3, 7, seed=seeds).numpy()
    assert ints.dtype == np.int32 and set(np.unique(ints)) == {3, 4, 5, 6}
    kept = keras.random.dropout(np.ones(N, np.float32), 0.25, seed=seeds).numpy()
    assert set(np.unique(kept)) == {0.0, np.float32(1 / 0.75)} and abs((kept == 0).mean() - 0.25) < 0.005


def test_a_seed_generator_moves_on_and_an_int_seed_repeats():
    seeds = keras.random.SeedGenerator(7)
    first, second = (keras.random.normal((4,), seed=seeds).numpy() for _ in range(2))
    assert not np.array_equal(first, second)
    again = keras.random.SeedGenerator(7)
    np.testing.assert_array_equal(keras.random.normal((4,), seed=again).numpy(), first)
    np.testing.assert_array_equal(
        keras.random.uniform((3,), seed=5).numpy(), keras.random.uniform((3,), seed=5).numpy()
    )
    with pytest.raises(TypeError, match="seed must be an int, a SeedGenerator or None"):
        keras.random.normal((2,), seed="five")


def test_tf_shape_is_the_static_shape():
    assert tf.shape(np.zeros((3, 2))) == (3, 2) and tf.shape(tf.ones((4,)))[0] == 4


class _TwoPlayers(keras.Model):
    """A model that defines only train_step (as Keras's GAN guide): fit never calls it."""

    def __init__(self):
        super().__init__()
        self.critic = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        self.maker = keras.Sequential([keras.Input((2,)), keras.layers.Dense(4)])
        self.seeds = keras.random.SeedGenerator(1)

    def compile(self, critic_optimizer, maker_optimizer):
        super().compile()
        self.critic_optimizer, self.maker_optimizer = critic_optimizer, maker_optimizer

    def train_step(self, real):
        noise = keras.random.normal((tf.shape(real)[0], 2), seed=self.seeds)
        with tf.GradientTape() as tape:
            critic_loss = tf.reduce_mean(self.critic(self.maker(noise))) - tf.reduce_mean(self.critic(real))
        grads = tape.gradient(critic_loss, self.critic.trainable_weights)
        self.critic_optimizer.apply(grads, self.critic.trainable_weights)
        with tf.GradientTape() as tape:
            maker_loss = -tf.reduce_mean(self.critic(self.maker(noise)))
        grads = tape.gradient(maker_loss, self.maker.trainable_weights)
        self.maker_optimizer.apply(grads, self.maker.trainable_weights)
        return {"critic_loss": critic_loss, "maker_loss": maker_loss}


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "set_jit"])
def test_a_model_with_only_a_train_step_fits(jit):
    keras.utils.set_random_seed(0)
    tf.config.set_jit(jit)
    try:
        players = _TwoPlayers()
        players.compile(keras.optimizers.SGD(0.01), keras.optimizers.SGD(0.01))
        real = np.random.default_rng(0).standard_normal((64, 4)).astype(np.float32)
        history = players.fit(tf.data.Dataset.from_tensor_slices(real).batch(16), epochs=2, verbose=0)
    finally:
        tf.config.set_jit(False)
    assert set(history.history) >= {"critic_loss", "maker_loss"} and len(history.history["critic_loss"]) == 2
    assert np.isfinite(history.history["maker_loss"]).all()
