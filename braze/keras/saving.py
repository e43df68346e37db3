"""``keras.saving``."""

from braze.nn.saving import (
    CustomObjectScope,
    deserialize,
    get_custom_objects,
    load_model,
    register_keras_serializable,
    save_model,
    serialize,
)

custom_object_scope = CustomObjectScope
serialize_keras_object = serialize
deserialize_keras_object = deserialize

__all__ = [
    "CustomObjectScope",
    "custom_object_scope",
    "deserialize_keras_object",
    "get_custom_objects",
    "load_model",
    "register_keras_serializable",
    "save_model",
    "serialize_keras_object",
]
