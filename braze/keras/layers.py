"""``keras.layers``: braze's layers, which carry Keras's names and signatures."""

from braze.nn.conv import *  # noqa: F403 - the same layers, under Keras's module path
from braze.nn.conv import __all__ as _conv
from braze.nn.functional import Input, InputLayer
from braze.nn.layer import Layer
from braze.nn.layers import *  # noqa: F403
from braze.nn.layers import __all__ as _core
from braze.nn.merging import *  # noqa: F403
from braze.nn.merging import __all__ as _merging
from braze.nn.normalization import BatchNormalization

__all__ = [*_conv, *_core, *_merging, "BatchNormalization", "Input", "InputLayer", "Layer"]
