"""The encoder-decoder model and its configuration."""

from keras_transformer.models.config import TransformerConfig
from keras_transformer.models.transformer import Transformer, build_transformer

__all__ = ["Transformer", "TransformerConfig", "build_transformer"]
