"""``keras.ops``: the common functions, on tensors and on the functional API's symbolic
tensors alike."""

from types import SimpleNamespace

from braze.nn.keras_ops import FUNCTIONS, IMAGE_FUNCTIONS

abs = FUNCTIONS["abs"]  # noqa: A001 - Keras's name
add = FUNCTIONS["add"]
arange = FUNCTIONS["arange"]
argmax = FUNCTIONS["argmax"]
cast = FUNCTIONS["cast"]
clip = FUNCTIONS["clip"]
concatenate = FUNCTIONS["concatenate"]
convert_to_numpy = FUNCTIONS["convert_to_numpy"]
convert_to_tensor = FUNCTIONS["convert_to_tensor"]
divide = FUNCTIONS["divide"]
elu = FUNCTIONS["elu"]
equal = FUNCTIONS["equal"]
exp = FUNCTIONS["exp"]
expand_dims = FUNCTIONS["expand_dims"]
flip = FUNCTIONS["flip"]
full = FUNCTIONS["full"]
full_like = FUNCTIONS["full_like"]
gelu = FUNCTIONS["gelu"]
greater = FUNCTIONS["greater"]
greater_equal = FUNCTIONS["greater_equal"]
leaky_relu = FUNCTIONS["leaky_relu"]
less = FUNCTIONS["less"]
less_equal = FUNCTIONS["less_equal"]
log = FUNCTIONS["log"]
log_softmax = FUNCTIONS["log_softmax"]
logical_and = FUNCTIONS["logical_and"]
logical_not = FUNCTIONS["logical_not"]
logical_or = FUNCTIONS["logical_or"]
logsumexp = FUNCTIONS["logsumexp"]
matmul = FUNCTIONS["matmul"]
max = FUNCTIONS["max"]  # noqa: A001 - Keras's name
maximum = FUNCTIONS["maximum"]
mean = FUNCTIONS["mean"]
min = FUNCTIONS["min"]  # noqa: A001 - Keras's name
minimum = FUNCTIONS["minimum"]
multiply = FUNCTIONS["multiply"]
negative = FUNCTIONS["negative"]
norm = FUNCTIONS["norm"]
not_equal = FUNCTIONS["not_equal"]
one_hot = FUNCTIONS["one_hot"]
ones = FUNCTIONS["ones"]
ones_like = FUNCTIONS["ones_like"]
pad = FUNCTIONS["pad"]
power = FUNCTIONS["power"]
relu = FUNCTIONS["relu"]
reshape = FUNCTIONS["reshape"]
rsqrt = FUNCTIONS["rsqrt"]
selu = FUNCTIONS["selu"]
shape = FUNCTIONS["shape"]
sigmoid = FUNCTIONS["sigmoid"]
sign = FUNCTIONS["sign"]
silu = FUNCTIONS["silu"]
softmax = FUNCTIONS["softmax"]
softplus = FUNCTIONS["softplus"]
sqrt = FUNCTIONS["sqrt"]
square = FUNCTIONS["square"]
squeeze = FUNCTIONS["squeeze"]
stack = FUNCTIONS["stack"]
std = FUNCTIONS["std"]
subtract = FUNCTIONS["subtract"]
sum = FUNCTIONS["sum"]  # noqa: A001 - Keras's name
swish = FUNCTIONS["swish"]
tanh = FUNCTIONS["tanh"]
transpose = FUNCTIONS["transpose"]
var = FUNCTIONS["var"]
where = FUNCTIONS["where"]
zeros = FUNCTIONS["zeros"]
zeros_like = FUNCTIONS["zeros_like"]

__all__ = [
    "abs",
    "add",
    "arange",
    "argmax",
    "cast",
    "clip",
    "concatenate",
    "convert_to_numpy",
    "convert_to_tensor",
    "divide",
    "elu",
    "equal",
    "exp",
    "expand_dims",
    "flip",
    "full",
    "full_like",
    "gelu",
    "greater",
    "greater_equal",
    "image",
    "leaky_relu",
    "less",
    "less_equal",
    "log",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "min",
    "minimum",
    "multiply",
    "negative",
    "norm",
    "not_equal",
    "one_hot",
    "ones",
    "ones_like",
    "pad",
    "power",
    "relu",
    "reshape",
    "rsqrt",
    "selu",
    "shape",
    "sigmoid",
    "sign",
    "silu",
    "softmax",
    "softplus",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "subtract",
    "sum",
    "swish",
    "tanh",
    "transpose",
    "var",
    "where",
    "zeros",
    "zeros_like",
]

image = SimpleNamespace(**IMAGE_FUNCTIONS)
"""``keras.ops.image``: ``resize`` (as ``tf.image.resize``) and ``extract_patches``."""
