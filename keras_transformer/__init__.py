"""keras_transformer: the Transformer of "Attention Is All You Need" for Keras 3.

Layers, the encoder-decoder model, the paper's training recipe and decoding
are imported here; the subpackages `keras_transformer.data` (corpora,
tokenizer, tf.data pipeline), `keras_transformer.evaluation` (BLEU, chrF)
and `keras_transformer.export` (the text-in, text-out translator, its
SavedModel and CTranslate2 exports) are imported on their own, e.g.
`import keras_transformer.data`.
"""

from keras_transformer.decoding import beam_search, decode, greedy_decode
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
    "beam_search",
    "build_transformer",
    "causal_mask",
    "decode",
    "greedy_decode",
    "padding_mask_from_ids",
    "sinusoidal_encoding",
    "transformer_optimizer",
]
