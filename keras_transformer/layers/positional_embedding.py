"""Scaled token embedding plus the sinusoidal position encoding."""

import math

import keras
from keras import ops

from keras_transformer.layers.masks import padding_mask_from_ids
from keras_transformer.layers.sinusoidal_position_encoding import (
    SINUSOID_LAYOUTS,
    SinusoidalPositionEncoding,
)


@keras.saving.register_keras_serializable(package="keras_transformer")
class PositionalEmbedding(keras.layers.Layer):
    """Token embedding scaled by sqrt(d_model) plus the sinusoidal encoding.

    Section 3.4 and 3.5 of "Attention Is All You Need", composed as
    keras-hub's `TokenAndPositionEmbedding` composes it: token ids are
    looked up in `token_embedding` (a `keras.layers.ReversibleEmbedding`),
    multiplied by sqrt(d_model), added to `position_encoding` (a
    `SinusoidalPositionEncoding`) and passed through dropout. The encoding
    is computed for any length, so sequences longer than anything seen in
    training still embed at their true positions.

    The same matrix doubles as the pre-softmax projection when the layer is
    called with `reverse=True` (weight tying, section 3.4), optionally with
    a bias over the vocabulary (`output_bias`, Marian's `final_logits_bias`):
    `ReversibleEmbedding` has no bias term, so the bias is this layer's
    weight, added to the float32 logits.

    Token id 0 is padding: with `mask_zero=True` (the default) the layer
    attaches a Keras mask `token_ids != 0` to the embeddings of integer
    token ids, as `keras.layers.Embedding` does, and none to the logits of
    a `reverse=True` call.

    Args:
        vocab_size: number of token ids.
        d_model: embedding width.
        dropout: dropout rate applied to the sum, in [0, 1).
        mask_zero: whether to attach the padding mask as a Keras mask.
        embeddings_initializer: initializer of the matrix; by default
            normal with standard deviation d_model^-0.5, so that the scaled
            embedding has unit variance.
        sinusoid_layout: "interleaved" (the paper's) or "split" (Marian's),
            see `sinusoidal_encoding`.
        scale_embedding: multiply the looked-up vectors by sqrt(d_model),
            as the paper does; Marian checkpoints may not.
        output_bias: with `reverse=True`, add a learned bias (vocab_size,)
            to the logits.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: int token ids (B, T), or with `reverse=True` hidden states
            (B, T, d_model).
        start_index: absolute position of the first token (an int or scalar
            tensor), so that incremental decoding embeds token t at t.
        reverse: project hidden states onto the vocabulary instead.
        training: whether dropout is active.

    Returns:
        Embeddings (B, T, d_model), or with `reverse=True` float32 logits
        (B, T, vocab_size).

    Example:

    >>> layer = PositionalEmbedding(vocab_size=100, d_model=16)
    >>> embedded = layer(np.array([[5, 7, 0]]))
    >>> tuple(embedded.shape)
    (1, 3, 16)
    >>> tuple(layer(embedded, reverse=True).shape)
    (1, 3, 100)
    """

    def __init__(
        self,
        vocab_size,
        d_model,
        dropout=0.0,
        mask_zero=True,
        embeddings_initializer=None,
        sinusoid_layout="interleaved",
        scale_embedding=True,
        output_bias=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(vocab_size) < 1:
            raise ValueError(f"vocab_size must be >= 1, got {vocab_size}.")
        if int(d_model) < 1:
            raise ValueError(f"d_model must be >= 1, got {d_model}.")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}.")
        if sinusoid_layout not in SINUSOID_LAYOUTS:
            raise ValueError(
                f"sinusoid_layout must be one of {SINUSOID_LAYOUTS}, "
                f"got {sinusoid_layout!r}."
            )
        self.vocab_size = int(vocab_size)
        self.d_model = int(d_model)
        self.dropout = dropout
        self.mask_zero = mask_zero
        self.sinusoid_layout = sinusoid_layout
        self.scale_embedding = bool(scale_embedding)
        self.output_bias = bool(output_bias)
        self.embeddings_initializer = keras.initializers.get(
            embeddings_initializer
            or keras.initializers.RandomNormal(stddev=self.d_model**-0.5)
        )
        self.supports_masking = mask_zero
        self.token_embedding = keras.layers.ReversibleEmbedding(
            self.vocab_size,
            self.d_model,
            embeddings_initializer=self.embeddings_initializer,
            mask_zero=mask_zero,
            dtype=self.dtype_policy,
            name="token_embedding",
        )
        self.position_encoding = SinusoidalPositionEncoding(
            sinusoid_layout, dtype=self.dtype_policy, name="position_encoding"
        )
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="dropout"
        )

    def build(self, inputs_shape=None):
        self.token_embedding.build()
        self.bias = None
        if self.output_bias:
            self.bias = self.add_weight(
                name="output_bias", shape=(self.vocab_size,), initializer="zeros"
            )

    def call(self, inputs, start_index=0, reverse=False, training=None):
        if reverse:
            logits = self.token_embedding(inputs, reverse=True)  # (B, T, V)
            logits = ops.cast(logits, "float32")
            if self.bias is not None:
                logits = logits + ops.cast(self.bias, "float32")
            return logits
        embedded = self.token_embedding(inputs)  # (B, T, D)
        if self.scale_embedding:
            embedded = embedded * ops.cast(math.sqrt(self.d_model), self.compute_dtype)
        encoding = self.position_encoding(embedded, start_index=start_index)
        return self.dropout_layer(embedded + encoding, training=training)

    def compute_output_shape(self, inputs_shape, reverse=False):
        """(B, T, d_model) for token ids (B, T); with `reverse=True`
        (B, T, vocab_size) for hidden states (B, T, d_model)."""
        if reverse:
            return (*inputs_shape[:-1], self.vocab_size)
        return (*inputs_shape, self.d_model)

    def compute_output_spec(self, inputs, start_index=0, reverse=False, training=None):
        dtype = "float32" if reverse else self.compute_dtype  # float32 logits
        shape = self.compute_output_shape(inputs.shape, reverse)
        return keras.KerasTensor(shape, dtype=dtype)

    def compute_mask(self, inputs, mask=None):
        dtype = keras.backend.standardize_dtype(inputs.dtype)
        if not self.mask_zero or "int" not in dtype:  # hidden states: no mask
            return None
        return padding_mask_from_ids(inputs)  # (B, T)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "d_model": self.d_model,
                "dropout": self.dropout,
                "mask_zero": self.mask_zero,
                "embeddings_initializer": keras.initializers.serialize(
                    self.embeddings_initializer
                ),
                "sinusoid_layout": self.sinusoid_layout,
                "scale_embedding": self.scale_embedding,
                "output_bias": self.output_bias,
            }
        )
        return config
