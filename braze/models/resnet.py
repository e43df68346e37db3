"""ResNet-20 for 32x32 images (He et al., "Deep Residual Learning", section 4.2), written
with Keras's functional API.

A 3x3 convolution of 16 filters, then three stages of three residual blocks with 16, 32
and 64 filters; a block is conv3x3 - batch norm - ReLU - conv3x3 - batch norm, added to
its input, then ReLU. The first block of the second and third stages halves the image
with stride 2 and projects its input with a 1x1 convolution of stride 2 (and batch norm)
to match. Global average pooling and a dense layer give the class logits. Convolutions
before a batch norm have no bias (the norm's shift takes its place).
"""

from __future__ import annotations

from braze.nn import Add, BatchNormalization, Conv2D, Dense, GlobalAveragePooling2D, Input, Model, ReLU
from braze.nn.symbolic import KerasTensor
from braze.ops.random import Generator

STAGES = (16, 32, 64)
BLOCKS_PER_STAGE = 3


def _conv_bn(x: KerasTensor, filters: int, size: int, stride: int, g: Generator | None) -> KerasTensor:
    x = Conv2D(filters, size, strides=stride, padding="same", use_bias=False, generator=g)(x)
    return BatchNormalization()(x)


def residual_block(x: KerasTensor, filters: int, stride: int, g: Generator | None) -> KerasTensor:
    shortcut = x
    y = ReLU()(_conv_bn(x, filters, 3, stride, g))
    y = _conv_bn(y, filters, 3, 1, g)
    if stride != 1 or x.shape[-1] != filters:
        shortcut = _conv_bn(x, filters, 1, stride, g)
    return ReLU()(Add()([y, shortcut]))


def ResNet20(  # noqa: N802 - a model constructor, as in Keras
    input_shape: tuple[int, int, int] = (32, 32, 3), classes: int = 10, seed: int | None = None
) -> Model:
    """ResNet-20 over NHWC images of ``input_shape``, returning ``classes`` logits."""
    g = Generator(seed) if seed is not None else None
    inputs = Input(shape=input_shape)
    x = ReLU()(_conv_bn(inputs, STAGES[0], 3, 1, g))
    for stage, filters in enumerate(STAGES):
        for block in range(BLOCKS_PER_STAGE):
            x = residual_block(x, filters, 2 if stage > 0 and block == 0 else 1, g)
    x = GlobalAveragePooling2D()(x)
    return Model(inputs, Dense(classes, generator=g)(x), name="resnet20")
