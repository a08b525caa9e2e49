"""One decoder layer: causal self-attention, cross-attention, feed-forward."""

import numbers

import keras
from keras import ops

from keras_transformer.layers.attention_cache import updated_cache_shape
from keras_transformer.layers.block import TransformerBlock
from keras_transformer.layers.output_specs import symbolic_outputs
from keras_transformer.layers.shapes import static_length


@keras.saving.register_keras_serializable(package="keras_transformer")
class DecoderBlock(TransformerBlock):
    """One of the N identical decoder layers of section 3.1.

    Masked (causal) multi-head self-attention, multi-head attention over the
    encoder output, and a position-wise feed-forward network, each wrapped in
    dropout, a residual connection and layer norm (post-norm by default,
    pre-norm with `norm_first=True`).

    For incremental decoding pass a `self_attention_cache` (from
    `empty_self_attention_cache`, then from the previous call) with
    `cache_index` and `cache_update` (see `MultiHeadAttention`), and a
    `cross_attention_cache` from `compute_cross_attention_cache` instead of
    the encoder sequence: then each call costs only the new tokens. The
    cross-attention cache may have one row per source item while
    `decoder_sequence` has `rows_per_item` = G consecutive rows per item
    (beam search's beams, beam k of item b at row b * G + k): the G rows
    then attend together over their item's row, folded into the query
    axis, so that the cache is never tiled or reordered.

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
        decoder_padding_mask: (B, T), true for real decoder tokens. Without
            a `self_attention_cache` it defaults to the Keras mask attached
            to `decoder_sequence`, if any; with one it is an error (it
            covers the T new tokens, not the cache's L positions) and the
            Keras mask is not read: pass `decoder_attention_mask` instead.
        encoder_padding_mask: (B, S), true for real encoder tokens.
            Defaults to the Keras mask attached to `encoder_sequence`.
        decoder_attention_mask: (B, T, T), or (B, T, L) with a
            `self_attention_cache`: true where decoder token t may see
            position s.
        use_causal_mask: keep each position from later ones (default true).
        self_attention_cache: `(keys, values)`, each (B, h, L, D / h), of
            the tokens decoded so far.
        cross_attention_cache: `(keys, values)`, each (B / G, h, S, D / h),
            of the encoder sequence (see above).
        cache_index: position of the first token of `decoder_sequence`.
        cache_update: how the self-attention cache takes the new tokens,
            "append" (a cache of `cache_index` positions that grows) or
            "write" (a fixed-length buffer); see `MultiHeadAttention`.
        rows_per_item: G, the number of consecutive `decoder_sequence`
            rows that share one row of `cross_attention_cache` (an int, or
            a scalar int tensor outside `jax.jit`); 1 by default.
        return_attention_scores: also return the (B, h, T, S)
            cross-attention probabilities (without caches only).
        training: whether dropout is active.

    Returns:
        (B, T, D), or with `return_attention_scores` also the
        cross-attention probabilities. With a `self_attention_cache`,
        `(outputs, self_attention_cache)`: the cache after the update.
        `compute_output_shape` gives the same structure of shapes.

    Example:

    >>> block = DecoderBlock(num_heads=2, d_ff=32)
    >>> target = np.random.rand(2, 4, 16).astype("float32")
    >>> source = np.random.rand(2, 6, 16).astype("float32")
    >>> tuple(block(target, source).shape)
    (2, 4, 16)

    Decoding 3 beams of each item, one token at a time, against one
    cross-attention cache row per item:

    >>> cross_cache = block.compute_cross_attention_cache(source)  # 2 rows
    >>> cache = block.empty_self_attention_cache(batch_size=2 * 3)
    >>> step = np.random.rand(2 * 3, 1, 16).astype("float32")
    >>> outputs, cache = block(step, self_attention_cache=cache,
    ...                        cross_attention_cache=cross_cache, cache_index=0,
    ...                        cache_update="append", rows_per_item=3)
    >>> tuple(outputs.shape), tuple(cache[0].shape)
    ((6, 1, 16), (6, 2, 1, 8))
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

    def empty_self_attention_cache(self, batch_size, length=0):
        """A `self_attention_cache` of zeros, (B, h, L, D / h) each.

        Made by the self-attention (`MultiHeadAttention.empty_cache`), so
        it has the block's compute dtype; the block must be built.

        Args:
            batch_size: B, an int or scalar int tensor.
            length: L, 0 for a cache that "append" grows, or the length of
                a buffer that "write" writes in place (int or scalar tensor).
        """
        if not self.built:
            raise ValueError(
                f"{self.name} is not built, so d_model is not known yet: "
                "call or build it before asking for a self-attention cache."
            )
        return self.self_attention.empty_cache(batch_size, length)

    def call(
        self,
        decoder_sequence,
        encoder_sequence=None,
        decoder_padding_mask=None,
        encoder_padding_mask=None,
        decoder_attention_mask=None,
        use_causal_mask=True,
        self_attention_cache=None,
        cross_attention_cache=None,
        cache_index=None,
        cache_update=None,
        rows_per_item=1,
        return_attention_scores=False,
        training=None,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
    ):
        if encoder_sequence is None and cross_attention_cache is None:
            raise ValueError(
                "DecoderBlock needs `encoder_sequence` or `cross_attention_cache`."
            )
        if self_attention_cache is None:
            if decoder_padding_mask is None:  # Keras passes the sequence's mask
                decoder_padding_mask = decoder_sequence_mask
        else:
            _check_self_attention_cache(cache_update, decoder_padding_mask)
        if encoder_padding_mask is None:
            encoder_padding_mask = encoder_sequence_mask
        grouped = isinstance(rows_per_item, numbers.Integral) and rows_per_item != 1
        if cross_attention_cache is None and grouped:
            raise ValueError(
                f"rows_per_item={rows_per_item} needs a cross_attention_cache: "
                "with encoder_sequence each decoder row has its own row."
            )
        if return_attention_scores and (
            self_attention_cache is not None or cross_attention_cache is not None
        ):
            raise ValueError(
                "return_attention_scores is not supported with a cache; call "
                "the block without one (a teacher-forced pass) to get the scores."
            )

        x = self._sublayer_inputs(decoder_sequence, self.self_attention_layer_norm)
        attended = self.self_attention(
            x,
            x,
            padding_mask=decoder_padding_mask,
            attention_mask=decoder_attention_mask,
            use_causal_mask=use_causal_mask,
            cache=self_attention_cache,
            cache_index=cache_index,
            cache_update=cache_update,
            training=training,
        )
        if self_attention_cache is not None:
            attended, self_attention_cache = attended  # the cache updated
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
                x, cross_attention_cache, encoder_padding_mask, rows_per_item, training
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

    def _attend_to_cache(self, x, cache, padding_mask, rows_per_item, training):
        """Cross-attention of `x` (B, T, D) over a cache of B / G rows, G =
        `rows_per_item`.

        The G consecutive rows of an item are folded into the query axis,
        (B / G, G * T, D), attend together over their item's keys and
        values, and are unfolded: the cache is never tiled.
        """
        _check_rows_per_item(rows_per_item, x.shape[0], cache[0].shape[0])
        length = static_length(x)
        group_length = rows_per_item * length  # G * T
        folded = ops.reshape(x, (-1, group_length, x.shape[-1]))  # (B / G, G * T, D)
        attended, _ = self.cross_attention(
            folded, padding_mask=padding_mask, cache=cache, training=training
        )  # (B / G, G * T, D)
        return ops.reshape(attended, (-1, length, attended.shape[-1]))  # (B, T, D)

    def compute_output_shape(
        self,
        decoder_sequence_shape,
        encoder_sequence_shape=None,
        self_attention_cache_shape=None,
        cache_update=None,
        return_attention_scores=False,
    ):
        """The shapes of what `call` returns, in the same structure: (B, T,
        D); with a `self_attention_cache` (its shapes given), that and the
        cache's after the update; with `return_attention_scores`, that and
        the cross-attention probabilities' (B, h, T, S)."""
        outputs_shape = tuple(decoder_sequence_shape)
        batch, length = outputs_shape[:2]
        if self_attention_cache_shape is not None:
            cache_shape = updated_cache_shape(
                self_attention_cache_shape, length, cache_update
            )
            return outputs_shape, cache_shape
        if return_attention_scores:
            source_length = encoder_sequence_shape[1]
            return outputs_shape, (batch, self.num_heads, length, source_length)
        return outputs_shape

    def compute_output_spec(
        self,
        decoder_sequence,
        encoder_sequence=None,
        *,
        self_attention_cache=None,
        cache_update=None,
        return_attention_scores=False,
        **kwargs,  # masks, the cross-attention cache, ...: they change no shape
    ):
        shapes = self.compute_output_shape(
            decoder_sequence.shape,
            None if encoder_sequence is None else encoder_sequence.shape,
            None
            if self_attention_cache is None
            else tuple(part.shape for part in self_attention_cache),
            cache_update,
            return_attention_scores,
        )
        return symbolic_outputs(shapes, self.compute_dtype)


def _check_self_attention_cache(cache_update, decoder_padding_mask):
    if cache_update is None:
        raise ValueError(
            'A self_attention_cache needs cache_update "append" or "write".'
        )
    if decoder_padding_mask is not None:
        raise ValueError(
            "decoder_padding_mask cannot be given with a self_attention_cache: "
            "it covers the T new tokens, not the L positions of the cache. "
            "Leave it out (the causal mask already hides the positions after "
            "each token), or pass decoder_attention_mask, (B, T, L), true "
            "where a new token may see a position of the cache."
        )


def _check_rows_per_item(rows_per_item, decoder_rows, cache_rows):
    """Raises ValueError unless `decoder_rows` is `cache_rows *
    rows_per_item`, where all three are known as Python ints (a tensor
    `rows_per_item` is checked by the reshape that folds the rows)."""
    if not isinstance(rows_per_item, numbers.Integral):
        return
    if rows_per_item < 1:
        raise ValueError(f"rows_per_item must be >= 1, got {rows_per_item}.")
    if None not in (decoder_rows, cache_rows) and (
        decoder_rows != cache_rows * rows_per_item
    ):
        raise ValueError(
            f"decoder_sequence has {decoder_rows} rows, but cross_attention_cache "
            f"has {cache_rows} rows and rows_per_item={rows_per_item}: expected "
            f"{cache_rows} * {rows_per_item} = {cache_rows * rows_per_item} "
            "decoder rows."
        )
