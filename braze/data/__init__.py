"""Datasets and input pipelines for braze, producing plain NumPy arrays.

This package deliberately depends only on NumPy, the standard library and (lazily)
Pillow, and from braze only on the runtime (the job's rank and size for sharding, and the
eager CPU device that ``Dataset.map`` functions run on): the framework wraps the arrays
into tensors, and data loading can be used and tested on its own. (A ``TensorDataset`` of
tensors gives batches of tensors, as PyTorch's: made by the tensors' own class.)
"""

from braze.data.augment import Augment
from braze.data.csv_dataset import experimental
from braze.data.dataset import AUTOTUNE, Dataset, TextLineDataset
from braze.data.errors import DataError
from braze.data.idx import read_idx
from braze.data.image_folder import ImageFolder, img_to_array, load_img
from braze.data.image_generator import ImageDataGenerator
from braze.data.keras_utils import PyDataset, Sequence, pad_sequences, to_categorical
from braze.data.loader import DataLoader, TensorDataset, mnist_loaders
from braze.data.mnist import MNIST, load_mnist
from braze.data.shakespeare import BlockSampler, CharTokenizer, Shakespeare, load_shakespeare
from braze.data.synthetic import make_two_class_folder

__all__ = [
    "AUTOTUNE",
    "MNIST",
    "Dataset",
    "PyDataset",
    "TextLineDataset",
    "experimental",
    "Sequence",
    "Augment",
    "BlockSampler",
    "CharTokenizer",
    "DataError",
    "DataLoader",
    "ImageDataGenerator",
    "ImageFolder",
    "Shakespeare",
    "TensorDataset",
    "img_to_array",
    "load_img",
    "load_mnist",
    "load_shakespeare",
    "make_two_class_folder",
    "mnist_loaders",
    "pad_sequences",
    "read_idx",
    "to_categorical",
]
