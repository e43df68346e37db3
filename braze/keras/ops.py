"""``keras.ops``: the common functions, on tensors and on the functional API's symbolic
tensors alike."""

from types import SimpleNamespace

from braze.nn.keras_ops import FUNCTIONS, IMAGE_FUNCTIONS

abs = FUNCTIONS["abs"]  # noqa: A001 - Keras's name
add = FUNCTIONS["add"]
all = FUNCTIONS["all"]  # noqa: A001 - Keras's name
any = FUNCTIONS["any"]  # noqa: A001 - Keras's name
arange = FUNCTIONS["arange"]
argmax = FUNCTIONS["argmax"]
argmin = FUNCTIONS["argmin"]
argsort = FUNCTIONS["argsort"]
average = FUNCTIONS["average"]
binary_crossentropy = FUNCTIONS["binary_crossentropy"]
cast = FUNCTIONS["cast"]
categorical_crossentropy = FUNCTIONS["categorical_crossentropy"]
ceil = FUNCTIONS["ceil"]
clip = FUNCTIONS["clip"]
concatenate = FUNCTIONS["concatenate"]
cond = FUNCTIONS["cond"]
convert_to_numpy = FUNCTIONS["convert_to_numpy"]
convert_to_tensor = FUNCTIONS["convert_to_tensor"]
cos = FUNCTIONS["cos"]
count_nonzero = FUNCTIONS["count_nonzero"]
ctc_decode = FUNCTIONS["ctc_decode"]
ctc_loss = FUNCTIONS["ctc_loss"]
cumprod = FUNCTIONS["cumprod"]
cumsum = FUNCTIONS["cumsum"]
divide = FUNCTIONS["divide"]
dot = FUNCTIONS["dot"]
einsum = FUNCTIONS["einsum"]
elu = FUNCTIONS["elu"]
equal = FUNCTIONS["equal"]
exp = FUNCTIONS["exp"]
expand_dims = FUNCTIONS["expand_dims"]
expm1 = FUNCTIONS["expm1"]
eye = FUNCTIONS["eye"]
flip = FUNCTIONS["flip"]
floor = FUNCTIONS["floor"]
floor_divide = FUNCTIONS["floor_divide"]
full = FUNCTIONS["full"]
full_like = FUNCTIONS["full_like"]
gelu = FUNCTIONS["gelu"]
greater = FUNCTIONS["greater"]
greater_equal = FUNCTIONS["greater_equal"]
hard_sigmoid = FUNCTIONS["hard_sigmoid"]
hstack = FUNCTIONS["hstack"]
identity = FUNCTIONS["identity"]
isclose = FUNCTIONS["isclose"]
isfinite = FUNCTIONS["isfinite"]
isnan = FUNCTIONS["isnan"]
leaky_relu = FUNCTIONS["leaky_relu"]
less = FUNCTIONS["less"]
less_equal = FUNCTIONS["less_equal"]
linspace = FUNCTIONS["linspace"]
log = FUNCTIONS["log"]
log1p = FUNCTIONS["log1p"]
log_sigmoid = FUNCTIONS["log_sigmoid"]
log_softmax = FUNCTIONS["log_softmax"]
logical_and = FUNCTIONS["logical_and"]
logical_not = FUNCTIONS["logical_not"]
logical_or = FUNCTIONS["logical_or"]
logsumexp = FUNCTIONS["logsumexp"]
matmul = FUNCTIONS["matmul"]
max = FUNCTIONS["max"]  # noqa: A001 - Keras's name
maximum = FUNCTIONS["maximum"]
mean = FUNCTIONS["mean"]
meshgrid = FUNCTIONS["meshgrid"]
min = FUNCTIONS["min"]  # noqa: A001 - Keras's name
minimum = FUNCTIONS["minimum"]
mod = FUNCTIONS["mod"]
moveaxis = FUNCTIONS["moveaxis"]
multiply = FUNCTIONS["multiply"]
nan_to_num = FUNCTIONS["nan_to_num"]
ndim = FUNCTIONS["ndim"]
negative = FUNCTIONS["negative"]
norm = FUNCTIONS["norm"]
normalize = FUNCTIONS["normalize"]
not_equal = FUNCTIONS["not_equal"]
one_hot = FUNCTIONS["one_hot"]
ones = FUNCTIONS["ones"]
ones_like = FUNCTIONS["ones_like"]
outer = FUNCTIONS["outer"]
pad = FUNCTIONS["pad"]
power = FUNCTIONS["power"]
ravel = FUNCTIONS["ravel"]
relu = FUNCTIONS["relu"]
relu6 = FUNCTIONS["relu6"]
repeat = FUNCTIONS["repeat"]
reshape = FUNCTIONS["reshape"]
roll = FUNCTIONS["roll"]
round = FUNCTIONS["round"]  # noqa: A001 - Keras's name
rsqrt = FUNCTIONS["rsqrt"]
segment_sum = FUNCTIONS["segment_sum"]
selu = FUNCTIONS["selu"]
shape = FUNCTIONS["shape"]
sigmoid = FUNCTIONS["sigmoid"]
sign = FUNCTIONS["sign"]
silu = FUNCTIONS["silu"]
sin = FUNCTIONS["sin"]
size = FUNCTIONS["size"]
slice = FUNCTIONS["slice"]  # noqa: A001 - Keras's name
softmax = FUNCTIONS["softmax"]
softplus = FUNCTIONS["softplus"]
sort = FUNCTIONS["sort"]
sparse_categorical_crossentropy = FUNCTIONS["sparse_categorical_crossentropy"]
split = FUNCTIONS["split"]
sqrt = FUNCTIONS["sqrt"]
square = FUNCTIONS["square"]
squeeze = FUNCTIONS["squeeze"]
stack = FUNCTIONS["stack"]
std = FUNCTIONS["std"]
stop_gradient = FUNCTIONS["stop_gradient"]
subtract = FUNCTIONS["subtract"]
sum = FUNCTIONS["sum"]  # noqa: A001 - Keras's name
swish = FUNCTIONS["swish"]
take = FUNCTIONS["take"]
take_along_axis = FUNCTIONS["take_along_axis"]
tanh = FUNCTIONS["tanh"]
tensordot = FUNCTIONS["tensordot"]
tile = FUNCTIONS["tile"]
top_k = FUNCTIONS["top_k"]
transpose = FUNCTIONS["transpose"]
tril = FUNCTIONS["tril"]
triu = FUNCTIONS["triu"]
unstack = FUNCTIONS["unstack"]
var = FUNCTIONS["var"]
vstack = FUNCTIONS["vstack"]
where = FUNCTIONS["where"]
zeros = FUNCTIONS["zeros"]
zeros_like = FUNCTIONS["zeros_like"]

__all__ = [
    "abs",
    "add",
    "all",
    "any",
    "arange",
    "argmax",
    "argmin",
    "argsort",
    "average",
    "binary_crossentropy",
    "cast",
    "categorical_crossentropy",
    "ceil",
    "clip",
    "concatenate",
    "cond",
    "convert_to_numpy",
    "convert_to_tensor",
    "core",
    "cos",
    "count_nonzero",
    "ctc_decode",
    "ctc_loss",
    "cumprod",
    "cumsum",
    "divide",
    "dot",
    "einsum",
    "elu",
    "equal",
    "exp",
    "expand_dims",
    "expm1",
    "eye",
    "flip",
    "floor",
    "floor_divide",
    "full",
    "full_like",
    "gelu",
    "greater",
    "greater_equal",
    "hard_sigmoid",
    "hstack",
    "identity",
    "image",
    "isclose",
    "isfinite",
    "isnan",
    "leaky_relu",
    "less",
    "less_equal",
    "linspace",
    "log",
    "log1p",
    "log_sigmoid",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logsumexp",
    "matmul",
    "max",
    "maximum",
    "mean",
    "meshgrid",
    "min",
    "minimum",
    "mod",
    "moveaxis",
    "multiply",
    "nan_to_num",
    "ndim",
    "negative",
    "nn",
    "norm",
    "normalize",
    "not_equal",
    "numpy",
    "one_hot",
    "ones",
    "ones_like",
    "outer",
    "pad",
    "power",
    "ravel",
    "relu",
    "relu6",
    "repeat",
    "reshape",
    "roll",
    "round",
    "rsqrt",
    "segment_sum",
    "selu",
    "shape",
    "sigmoid",
    "sign",
    "silu",
    "sin",
    "size",
    "slice",
    "softmax",
    "softplus",
    "sort",
    "sparse_categorical_crossentropy",
    "split",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "stop_gradient",
    "subtract",
    "sum",
    "swish",
    "take",
    "take_along_axis",
    "tanh",
    "tensordot",
    "tile",
    "top_k",
    "transpose",
    "tril",
    "triu",
    "unstack",
    "var",
    "vstack",
    "where",
    "zeros",
    "zeros_like",
]

image = SimpleNamespace(**IMAGE_FUNCTIONS)
"""``keras.ops.image``: ``resize`` (as ``tf.image.resize``) and ``extract_patches``."""

# Keras 3's sub-namespaces of the same functions: ``keras.ops.nn`` the activations and the
# losses, ``keras.ops.core`` the control flow and conversions, ``keras.ops.numpy`` the rest.
_NN = {
    "ctc_decode",
    "ctc_loss",
    "binary_crossentropy",
    "categorical_crossentropy",
    "elu",
    "gelu",
    "hard_sigmoid",
    "leaky_relu",
    "log_sigmoid",
    "log_softmax",
    "moments",
    "normalize",
    "one_hot",
    "relu",
    "relu6",
    "selu",
    "sigmoid",
    "silu",
    "softmax",
    "softplus",
    "sparse_categorical_crossentropy",
    "swish",
}
_CORE = {"cond", "convert_to_numpy", "convert_to_tensor", "scan", "slice", "stop_gradient", "unstack", "shape"}
nn = SimpleNamespace(**{name: f for name, f in FUNCTIONS.items() if name in _NN})
"""``keras.ops.nn``: the activations, ``one_hot``, ``normalize`` and the cross-entropies."""
core = SimpleNamespace(**{name: f for name, f in FUNCTIONS.items() if name in _CORE})
"""``keras.ops.core``: ``cond``, ``convert_to_tensor``, ``shape``, ``stop_gradient``..."""
numpy = SimpleNamespace(**{name: f for name, f in FUNCTIONS.items() if name not in _NN | _CORE})
"""``keras.ops.numpy``: the NumPy-named functions."""
