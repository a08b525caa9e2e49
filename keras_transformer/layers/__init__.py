"""Transformer layers: embedding, attention, feed-forward, encoder/decoder blocks."""

from keras_transformer.layers.decoder_block import DecoderBlock
from keras_transformer.layers.encoder_block import EncoderBlock
from keras_transformer.layers.feed_forward import FeedForward
from keras_transformer.layers.masks import causal_mask, padding_mask_from_ids
from keras_transformer.layers.multi_head_attention import MultiHeadAttention
from keras_transformer.layers.positional_embedding import PositionalEmbedding
from keras_transformer.layers.sinusoidal_position_encoding import (
    SinusoidalPositionEncoding,
    sinusoidal_encoding,
)

__all__ = [
    "DecoderBlock",
    "EncoderBlock",
    "FeedForward",
    "MultiHeadAttention",
    "PositionalEmbedding",
    "SinusoidalPositionEncoding",
    "causal_mask",
    "padding_mask_from_ids",
    "sinusoidal_encoding",
]
