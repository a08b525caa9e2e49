"""The Transformer's API for decoding with caches, a token at a time."""


class CachedDecoding:
    """What the decoding loops call on a `Transformer`: the keys and values
    of the encoder output computed once (`compute_cross_attention_cache`),
    the self-attention caches (`init_cache`), and a step that costs only
    its new tokens (`decode_step`).

    A mixin of `Transformer`: it uses the model's `decoder_blocks`,
    `target_embedding` and `_logits`.
    """

    def compute_cross_attention_cache(self, encoder_outputs):
        """Every decoder layer's keys and values of the encoder output.

        Fixed for a source item while its target decodes: computed once,
        with one row per item. The token rows of `decode_step` may be K per
        item (beam k of item b at row b * K + k, `rows_per_item=K`).

        Args:
            encoder_outputs: (B, S, d_model) from `encode`.

        Returns:
            A tuple of `(keys, values)` pairs, one per decoder layer, each
            (B, h, S, d_model / h).
        """
        return tuple(
            block.compute_cross_attention_cache(encoder_outputs)
            for block in self.decoder_blocks
        )

    def init_cache(self, batch_size, max_length=None):
        """Empty self-attention caches: the state `decode_step` updates.

        Each decoder layer's self-attention makes its own
        (`DecoderBlock.empty_self_attention_cache`), so that its shapes and
        dtype have one owner.

        Args:
            batch_size: B, the rows decoded (an int or scalar tensor).
            max_length: None for caches of length 0 that each step extends
                (`decode_step(cache_update="append")`), or the most target
                tokens for buffers of that length that each step writes in
                place (`cache_update="write"`, the fixed shapes XLA needs).

        Returns:
            A tuple of `(keys, values)` pairs, one per decoder layer, each
            (B, h, L, d_model / h) with L = 0 or `max_length`, in the
            model's compute dtype.

        Example:

        >>> from keras_transformer import TransformerConfig, build_transformer
        >>> model = build_transformer(TransformerConfig.tiny(vocab_size=100))
        >>> cache = model.init_cache(batch_size=3, max_length=10)
        >>> len(cache) == model.config.num_decoder_layers
        True
        >>> [tuple(part.shape) for part in cache[0]]
        [(3, 4, 10, 32), (3, 4, 10, 32)]
        """
        length = 0 if max_length is None else max_length
        return tuple(
            block.empty_self_attention_cache(batch_size, length)
            for block in self.decoder_blocks
        )

    def decode_step(
        self,
        token_ids,
        cache,
        index,
        cross_attention_cache,
        encoder_padding_mask,
        cache_update="append",
        rows_per_item=1,
    ):
        """Decodes `token_ids` at positions `index, index + 1, ...` with a cache.

        Each call costs only the new tokens: their keys and values enter
        the cache and earlier ones are read back.

        Args:
            token_ids: int (B', t), usually t = 1; B' = B * `rows_per_item`
                rows for B source items.
            cache: from `init_cache` or a previous `decode_step`, B' rows.
            index: int or scalar tensor, position of `token_ids[:, 0]`.
            cross_attention_cache: from `compute_cross_attention_cache`, B
                rows.
            encoder_padding_mask: (B, S) from `encode`.
            cache_update: "append" for caches of `index` positions that
                grow by t, "write" for buffers written in place (see
                `init_cache`).
            rows_per_item: K, the number of consecutive rows of `token_ids`
                (and of `cache`) that share one source item, e.g. beam
                search's beams (beam k of item b at row b * K + k); an int,
                or a scalar int tensor outside `jax.jit`. See `DecoderBlock`.

        Returns:
            `(logits, cache)`: float32 (B', t, vocab_size) and the updated
            cache.
        """
        x = self.target_embedding(token_ids, start_index=index)  # (B', t, D)
        new_cache = []
        for block, self_cache, cross_cache in zip(
            self.decoder_blocks, cache, cross_attention_cache, strict=True
        ):
            x, self_cache = block(
                x,
                encoder_padding_mask=encoder_padding_mask,
                self_attention_cache=self_cache,
                cross_attention_cache=cross_cache,
                cache_index=index,
                cache_update=cache_update,
                rows_per_item=rows_per_item,
            )
            new_cache.append(self_cache)
        return self._logits(x), tuple(new_cache)
