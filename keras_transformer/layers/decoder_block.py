"""One decoder layer: causal self-attention, cross-attention, feed-forward."""

import keras
from keras import ops

from keras_transformer.layers.block import TransformerBlock
from keras_transformer.layers.position_wise import static_length


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderBlock(TransformerBlock):
    """One of the N identical decoder layers of section 3.1.

    Masked (causal) multi-head self-attention, multi-head attention over the
    encoder output, and a position-wise feed-forward network, each wrapped in
    dropout, a residual connection and layer norm (post-norm by default,
    pre-norm with `norm_first=True`).

    For incremental decoding pass a `self_attention_cache` with
    `cache_index` and `cache_update` (see `MultiHeadAttention`), and a
    `cross_attention_cache` from `compute_cross_attention_cache` instead of
    the encoder sequence: then each call costs only the new tokens. The
    cross-attention cache may have one row per source item while
    `decoder_sequence` has G consecutive rows per item (beam search's
    beams): the G rows then attend together over their item's row, folded
    into the query axis, so that the cache is never tiled or reordered.

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
        cross_attention_cache: `(keys, values)`, each (B / G, h, S, D / h),
            of the encoder sequence (see above).
        cache_index: position of the first token of `decoder_sequence`.
        cache_update: how the self-attention cache takes the new tokens,
            "append" (a cache of `cache_index` positions that grows) or
            "write" (a fixed-length buffer); see `MultiHeadAttention`.
        return_attention_scores: also return the (B, h, T, S)
            cross-attention probabilities (without caches only).
        training: whether dropout is active.

    Returns:
        (B, T, D), or with `return_attention_scores` also the
        cross-attention probabilities. With a `self_attention_cache`,
        `(outputs, self_attention_cache)`: the cache after the update.

    Example:

    >>> block = DecoderBlock(num_heads=2, d_ff=32)
    >>> target = np.random.rand(2, 4, 16).astype("float32")
    >>> source = np.random.rand(2, 6, 16).astype("float32")
    >>> tuple(block(target, source).shape)
    (2, 4, 16)
    """

    def build(self, decoder_sequence_shape, encoder_sequence_shape=None):
        encoder_sequence_shape = encoder_sequence_shape or decoder_sequence_shape
        shape = decoder_sequence_shape
        (
            self.self_attention,
            self.self_attention_layer_norm,
            self.self_attention_dropout,
        ) = self._make_attention_sublayer("self_attention", shape, shape)
        (
            self.cross_attention,
            self.cross_attention_layer_norm,
            self.cross_attention_dropout,
        ) = self._make_attention_sublayer(
            "cross_attention", shape, encoder_sequence_shape
        )
        (
            self.feed_forward,
            self.feed_forward_layer_norm,
            self.feed_forward_dropout,
        ) = self._make_feed_forward_sublayer(shape)

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
        cache_update=None,
        return_attention_scores=False,
        training=None,
    ):
        if encoder_sequence is None and cross_attention_cache is None:
            raise ValueError(
                "DecoderBlock needs `encoder_sequence` or `cross_attention_cache`."
            )
        if self_attention_cache is not None and cache_update is None:
            raise ValueError(
                'A self_attention_cache needs cache_update "append" or "write".'
            )

        x = self._sublayer_inputs(decoder_sequence, self.self_attention_layer_norm)
        arguments = dict(padding_mask=decoder_padding_mask, training=training)
        if self_attention_cache is None:
            attended = self.self_attention(
                x, x, use_causal_mask=use_causal_mask, **arguments
            )
        else:
            attended, self_attention_cache = self.self_attention(
                x,
                x,
                use_causal_mask=use_causal_mask,
                cache=self_attention_cache,
                cache_index=cache_index,
                cache_update=cache_update,
                **arguments,
            )
        outputs = self._sublayer_outputs(
            decoder_sequence,
            attended,
            self.self_attention_layer_norm,
            self.self_attention_dropout,
            training,
        )  # (B, T, D)

        x = self._sublayer_inputs(outputs, self.cross_attention_layer_norm)
        if cross_attention_cache is None:
            attended = self.cross_attention(
                x,
                encoder_sequence,
                padding_mask=encoder_padding_mask,
                return_attention_scores=return_attention_scores,
                training=training,
            )
            if return_attention_scores:
                attended, scores = attended  # scores (B, h, T, S)
        else:
            attended = self._attend_to_cache(
                x, cross_attention_cache, encoder_padding_mask, training
            )
        outputs = self._sublayer_outputs(
            outputs,
            attended,
            self.cross_attention_layer_norm,
            self.cross_attention_dropout,
            training,
        )  # (B, T, D)

        outputs = self._feed_forward_sublayer(outputs, training)  # (B, T, D)
        if self_attention_cache is not None:
            return outputs, self_attention_cache
        return (outputs, scores) if return_attention_scores else outputs

    def _attend_to_cache(self, x, cache, padding_mask, training):
        """Cross-attention of `x` (B, T, D) over a cache of B / G rows.

        The G rows of an item are folded into the query axis, (B / G, G * T,
        D), attend over their item's keys and values, and are unfolded.
        """
        items = ops.shape(cache[0])[0]
        folded = ops.reshape(x, (items, -1, x.shape[-1]))  # (B / G, G * T, D)
        attended, _ = self.cross_attention(
            folded, padding_mask=padding_mask, cache=cache, training=training
        )  # (B / G, G * T, D)
        unfolded = (-1, static_length(x), attended.shape[-1])
        return ops.reshape(attended, unfolded)  # (B, T, D)
