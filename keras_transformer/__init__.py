"""keras_transformer: the Transformer of "Attention Is All You Need" for Keras 3.

Layers, the encoder-decoder model and the paper's training recipe.
"""

from keras_transformer.layers import (
    DecoderBlock,
    EncoderBlock,
    FeedForward,
    MultiHeadAttention,
    PositionalEmbedding,
    causal_mask,
    padding_mask_from_ids,
    sinusoidal_encoding,
)
from keras_transformer.models import Transformer, TransformerConfig, build_transformer
from keras_transformer.training import (
    LabelSmoothedCrossEntropy,
    MaskedAccuracy,
    TransformerSchedule,
    transformer_optimizer,
)

__version__ = "0.1.0"

__all__ = [
    "DecoderBlock",
    "EncoderBlock",
    "FeedForward",
    "LabelSmoothedCrossEntropy",
    "MaskedAccuracy",
    "MultiHeadAttention",
    "PositionalEmbedding",
    "Transformer",
    "TransformerConfig",
    "TransformerSchedule",
    "build_transformer",
    "causal_mask",
    "padding_mask_from_ids",
    "sinusoidal_encoding",
    "transformer_optimizer",
]
