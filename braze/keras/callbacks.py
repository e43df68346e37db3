"""``keras.callbacks``."""

from braze.nn.callbacks import (
    Callback,
    CSVLogger,
    EarlyStopping,
    History,
    LambdaCallback,
    LearningRateScheduler,
    ModelCheckpoint,
    ReduceLROnPlateau,
    TerminateOnNaN,
)
from braze.nn.names import missing_names

__all__ = [
    "CSVLogger",
    "Callback",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "ReduceLROnPlateau",
    "TerminateOnNaN",
]

# Keras callbacks braze does not have, with what comes nearest in braze.
_MISSING = {
    "TensorBoard": "braze writes no TensorBoard event files: CSVLogger writes each epoch's logs, History holds them",
    "BackupAndRestore": "ModelCheckpoint, then keras.models.load_model and fit(initial_epoch=)",
    "RemoteMonitor": "a Callback of your own whose on_epoch_end sends the logs",
}


__getattr__ = missing_names("braze.keras.callbacks", _MISSING)
