"""One decoder layer: causal self-attention, cross-attention, feed-forward."""

import keras

from keras_transformer.layers.block import TransformerBlock


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderBlock(TransformerBlock):
    """One of the N identical decoder layers of section 3.1.

    Masked (causal) multi-head self-attention, multi-head attention over the
    encoder output, and a position-wise feed-forward network, each wrapped in
    dropout, a residual connection and layer norm (post-norm by default,
    pre-norm with `norm_first=True`).

    For incremental decoding pass a `self_attention_cache` with
    `cache_index` (see `MultiHeadAttention`), and a `cross_attention_cache`
    from `compute_cross_attention_cache(encoder_sequence)` instead of the
    encoder sequence: then each call costs only the new tokens.

    Args:
        num_heads: number of attention heads h.
        d_ff: inner width of the feed-forward network.
        dropout: dropout on each sub-layer's output, in [0, 1).
        attention_dropout: dropout on attention probabilities, in [0, 1).
        activation_dropout: dropout on the feed-forward network's inner
            activations, in [0, 1).
        activation: feed-forward activation, ReLU by default.
        norm_first: pre-norm instead of the paper's post-norm.
        layer_norm_epsilon: epsilon of the layer norms.
        kernel_initializer: initializer of every kernel.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        decoder_sequence: (B, T, D).
        encoder_sequence: (B, S, D_enc); may be omitted when a
            `cross_attention_cache` is given.
        decoder_padding_mask: (B, T), true for real decoder tokens.
        encoder_padding_mask: (B, S), true for real encoder tokens.
        use_causal_mask: keep each position from later ones (default true).
        self_attention_cache: `(keys, values)`, each (B, h, L, D / h), of
            the tokens decoded so far.
        cross_attention_cache: `(keys, values)`, each (B, h, S, D / h), of
            the encoder; it may have one row per item for K rows of `decoder_sequence`
            per item (beam search, see `MultiHeadAttention`).
        cache_index: position of the first token of `decoder_sequence`.
        grow_cache: append to a `self_attention_cache` of `cache_index`
            positions instead of writing into a fixed buffer (see
            `MultiHeadAttention`).
        return_attention_scores: also return the (B, h, T, S)
            cross-attention probabilities.
        training: whether dropout is active.

    Returns:
        (B, T, D); then the cross-attention probabilities if requested; then
        the updated self-attention cache if one was given.

    Example:

    >>> block = DecoderBlock(num_heads=2, d_ff=32)
    >>> target = np.random.rand(2, 4, 16).astype("float32")
    >>> source = np.random.rand(2, 6, 16).astype("float32")
    >>> tuple(block(target, source).shape)
    (2, 4, 16)
    """

    ATTENTION_NAMES = ("self_attention", "cross_attention")

    def __init__(self, num_heads, d_ff, **kwargs):
        super().__init__(num_heads, d_ff, **kwargs)
        self.self_attention_layer_norm = self._make_layer_norm(
            "self_attention_layer_norm"
        )
        self.self_attention_dropout = self._make_dropout("self_attention_dropout")
        self.cross_attention_layer_norm = self._make_layer_norm(
            "cross_attention_layer_norm"
        )
        self.cross_attention_dropout = self._make_dropout("cross_attention_dropout")
        self.feed_forward_layer_norm = self._make_layer_norm("feed_forward_layer_norm")
        self.feed_forward_dropout = self._make_dropout("feed_forward_dropout")

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        encoder_sequence_shape = encoder_sequence_shape or decoder_sequence_shape
        shape = decoder_sequence_shape
        self.self_attention = self._make_attention("self_attention", shape, shape)
        self.cross_attention = self._make_attention(
            "cross_attention", shape, encoder_sequence_shape
        )
        self._build_after_attention(shape)

    def compute_cross_attention_cache(self, encoder_sequence):
        """Encoder keys and values, each (B, h, S, D / h), computed once."""
        return self.cross_attention.compute_cache(encoder_sequence)

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        encoder_padding_mask=None,
        use_causal_mask=True,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_index=None,
        grow_cache=False,
        return_attention_scores=False,
        training=None,
    ):
        if encoder_sequence is None and cross_attention_cache is None:
            raise ValueError(
                "DecoderBlock needs `encoder_sequence` or `cross_attention_cache`."
            )

        x = self._sublayer_inputs(decoder_sequence, self.self_attention_layer_norm)
        outputs = self.self_attention(
            x,
            x,
            padding_mask=decoder_padding_mask,
            use_causal_mask=use_causal_mask,
            cache=self_attention_cache,
            cache_index=cache_index,
            grow_cache=grow_cache,
            training=training,
        )
        if self_attention_cache is not None:
            outputs, self_attention_cache = outputs  # the updated cache
        outputs = self._sublayer_outputs(
            decoder_sequence,
            outputs,
            self.self_attention_layer_norm,
            self.self_attention_dropout,
            training,
        )  # (B, T, D)

        x = self._sublayer_inputs(outputs, self.cross_attention_layer_norm)
        attended = self.cross_attention(
            x,
            encoder_sequence,
            padding_mask=encoder_padding_mask,
            cache=cross_attention_cache,
            return_attention_scores=return_attention_scores,
            training=training,
        )
        if return_attention_scores:
            attended, scores = attended  # scores (B, h, T, S)
        outputs = self._sublayer_outputs(
            outputs,
            attended,
            self.cross_attention_layer_norm,
            self.cross_attention_dropout,
            training,
        )  # (B, T, D)

        outputs = [self._feed_forward_sublayer(outputs, training)]  # (B, T, D)
        if return_attention_scores:
            outputs.append(scores)
        if self_attention_cache is not None:
            outputs.append(self_attention_cache)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)
