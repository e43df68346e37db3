"""``tensorflow.keras.callbacks``."""

from braze.nn.callbacks import Callback, CSVLogger, EarlyStopping, History, ModelCheckpoint

__all__ = ["CSVLogger", "Callback", "EarlyStopping", "History", "ModelCheckpoint"]
