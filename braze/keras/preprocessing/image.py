"""``tensorflow.keras.preprocessing.image``: braze's image folder and augmentation."""

from braze.data.image_folder import array_to_img, img_to_array, load_img
from braze.data.image_generator import ImageDataGenerator

__all__ = ["ImageDataGenerator", "array_to_img", "img_to_array", "load_img"]
