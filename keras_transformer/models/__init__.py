"""The encoder-decoder model and its configuration."""

from keras_transformer.lazy import lazy_attributes

_EXPORTS = {
    "TransformerConfig": "keras_transformer.models.config",
    "Transformer": "keras_transformer.models.transformer",
    "build_transformer": "keras_transformer.models.transformer",
    "load_model": "keras_transformer.models.saved_layout",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_attributes(__name__, _EXPORTS)
