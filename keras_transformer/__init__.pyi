from . import (
    alignment,
    data,
    decoding,
    evaluation,
    export,
    layers,
    marian,
    models,
    plots,
    recipe,
    serving,
    training,
)
from .decoding import beam_search, decode, greedy_decode
from .layers import (
    DecoderBlock,
    EncoderBlock,
    FeedForward,
    MultiHeadAttention,
    PositionalEmbedding,
    causal_mask,
    padding_mask_from_ids,
    sinusoidal_encoding,
)
from .models import Transformer, TransformerConfig, build_transformer
from .training import (
    LabelSmoothedCrossEntropy,
    MaskedAccuracy,
    TransformerSchedule,
    load_model,
    transformer_optimizer,
)

__version__: str

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
    "alignment",
    "beam_search",
    "build_transformer",
    "causal_mask",
    "data",
    "decode",
    "decoding",
    "evaluation",
    "export",
    "greedy_decode",
    "layers",
    "load_model",
    "marian",
    "models",
    "padding_mask_from_ids",
    "plots",
    "recipe",
    "serving",
    "sinusoidal_encoding",
    "training",
    "transformer_optimizer",
]
