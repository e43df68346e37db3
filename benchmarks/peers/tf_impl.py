"""TensorFlow peers: eager (a Python step with GradientTape), ``tf.function`` and
``tf.function(jit_compile=True)`` (XLA), all on raw ``tf.nn`` ops and ``tf.Variable`` s with
the SGD/Adam updates written by hand, so no Keras version question arises.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from .common import ADAM_BETA1, ADAM_BETA2, ADAM_EPS, BCE_EPS, init_params, make_batch, workload
from .gpt_common import SPECS as GPT_SPECS
from .tf_gpt import make_gpt_step
from .tf_resnet import resnet20_step

MODES = ("eager", "function", "xla")
THREADS = 2


def _import_tf():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    try:  # only possible before the runtime starts; later calls keep the first setting
        tf.config.threading.set_intra_op_parallelism_threads(THREADS)
        tf.config.threading.set_inter_op_parallelism_threads(THREADS)
    except RuntimeError:
        pass
    return tf


def version() -> str:
    return _import_tf().__version__


def make_step(name: str, mode: str = "eager") -> tuple[Callable[[], float], str]:
    tf = _import_tf()
    if mode not in MODES:
        raise ValueError(f"tf modes are {MODES}, not {mode!r}")
    if name in GPT_SPECS:
        step, what = make_gpt_step(tf, name, mode)
        return step, f"{what}, {THREADS} intra-op threads"
    w = workload(name)
    images, labels = make_batch(name)
    x, y = tf.constant(images), tf.constant(labels)
    if name == "resnet":
        return _wrapped(tf, resnet20_step(tf), mode, x, y, "Keras functional ResNet-20, GradientTape, keras SGD")
    specs = w.layers
    params = [(tf.Variable(k), tf.Variable(b)) for k, b in init_params(name)]
    variables = [v for pair in params for v in pair]

    def forward(x):
        it = iter(params)
        for spec in specs:
            kind = spec[0]
            if kind == "conv":
                kernel, bias = next(it)
                x = tf.nn.conv2d(x, kernel, 1, spec[4]) + bias
                if spec[5] == "relu":
                    x = tf.nn.relu(x)
            elif kind == "avgpool":
                x = tf.nn.avg_pool2d(x, 2, 2, "VALID")
            elif kind == "maxpool":
                x = tf.nn.max_pool2d(x, 2, 2, "VALID")
            elif kind == "flatten":
                x = tf.reshape(x, (x.shape[0], -1))
            elif kind == "dense":
                kernel, bias = next(it)
                x = tf.matmul(x, kernel) + bias
                if spec[3] == "relu":
                    x = tf.nn.relu(x)
        return x

    def loss_fn(x, y):
        out = forward(x)
        if w.loss == "sparse_softmax_ce":
            return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=out))
        p = tf.clip_by_value(tf.sigmoid(out[:, 0]), BCE_EPS, 1 - BCE_EPS)
        return -tf.reduce_mean(y * tf.math.log(p) + (1 - y) * tf.math.log(1 - p))

    lr = w.lr
    if w.optimizer == "sgd":

        def update(grads):
            for v, g in zip(variables, grads, strict=True):
                v.assign_sub(lr * g)
    else:
        t = tf.Variable(0.0)
        ms = [tf.Variable(tf.zeros_like(v)) for v in variables]
        vs = [tf.Variable(tf.zeros_like(v)) for v in variables]

        def update(grads):
            t.assign_add(1.0)
            c1 = 1 - tf.pow(ADAM_BETA1, t)
            c2 = 1 - tf.pow(ADAM_BETA2, t)
            for p, g, m, v in zip(variables, grads, ms, vs, strict=True):
                m.assign(ADAM_BETA1 * m + (1 - ADAM_BETA1) * g)
                v.assign(ADAM_BETA2 * v + (1 - ADAM_BETA2) * g * g)
                p.assign_sub(lr * (m / c1) / (tf.sqrt(v / c2) + ADAM_EPS))

    def train_step(x, y):
        with tf.GradientTape() as tape:
            loss = loss_fn(x, y)
        update(tape.gradient(loss, variables))
        return loss

    return _wrapped(tf, train_step, mode, x, y, "raw tf.nn ops")


def _wrapped(tf, train_step, mode: str, x, y, model: str) -> tuple[Callable[[], float], str]:
    """``train_step(x, y)`` eagerly, as a ``tf.function`` or compiled by XLA."""
    if mode == "function":
        train_step = tf.function(train_step)
        what = "tf.function(step)"
    elif mode == "xla":
        train_step = tf.function(train_step, jit_compile=True)
        what = "tf.function(step, jit_compile=True)"
    else:
        what = "eager GradientTape step"

    def step() -> float:
        return float(train_step(x, y).numpy())

    return step, f"{what}, {model}, NHWC, {THREADS} intra-op threads"
