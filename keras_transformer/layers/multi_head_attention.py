"""Multi-head scaled dot-product attention with a key/value cache."""

import math

import keras
from keras import ops

from keras_transformer.layers.attention_cache import (
    check_cache_arguments,
    update_cache,
    updated_cache_shape,
)
from keras_transformer.layers.fused_key_value import FusedKeyValue
from keras_transformer.layers.masks import mask_fill_value, merge_masks
from keras_transformer.layers.output_specs import symbolic_outputs
from keras_transformer.layers.shapes import static_length


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(FusedKeyValue, keras.layers.Layer):
    """Multi-head attention, section 3.2 of "Attention Is All You Need".

    Each of `num_heads` heads projects queries, keys and values to
    `key_dim` / `value_dim` channels, computes
    softmax(Q K^T / sqrt(key_dim)) V, and an output projection maps the
    concatenated heads back to the query width (or `output_dim`). Scores are
    normalised in float32 whatever the compute dtype, and masked scores are
    filled with a value that is finite in the compute dtype.

    Keys and values come from one fused projection, `key_value`: its
    kernel (D_v, h * (key_dim + value_dim)) holds for each head its key
    columns then its value columns (`split_key_value` and `fuse_key_value`
    convert to and from separate per-head weights); queries have their own,
    `query` (D_q, h * key_dim). Self-attention thus costs two matmuls
    instead of three, and a cross-attention cache one. Given the same
    weights, the output equals `keras.layers.MultiHeadAttention`'s.

    **The cache.** Incremental decoding keeps the keys and values it has
    computed in a cache `(keys, values)`, (B, num_heads, L, key_dim) and
    (B, num_heads, L, value_dim). Called with a `cache`, the layer attends
    over it and returns `(outputs, cache)`; `empty_cache` makes one to
    start from, and `cache_update` says how the keys and values of `value`
    enter it first:

    - None: they do not. The cache is attended as given, e.g. the keys
      and values of an encoder sequence from `compute_cache`, computed once
      for every decoding step (cross-attention; `value` is ignored).
    - "append": the cache holds the `cache_index` positions before the
      query, and the new keys and values are appended (L grows by T). No
      step copies the cache whole or attends over positions not yet
      written; XLA, which compiles fixed shapes only, cannot compile it.
    - "write": the cache is a buffer of fixed length L, and the new keys
      and values are written at positions `cache_index, ..., cache_index +
      T - 1`; with `use_causal_mask=True` the positions not yet written stay
      invisible. The shapes XLA (and TPUs) need.

    Args:
        num_heads: number of heads h.
        key_dim: size of each query/key head d_k.
        value_dim: size of each value head d_v; defaults to `key_dim`.
        dropout: dropout rate on the attention probabilities, in [0, 1).
        use_bias: whether the projections have biases.
        output_dim: width of the output; defaults to the query's width.
        kernel_initializer: initializer of the projection kernels.
        bias_initializer: initializer of the projection biases.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        query: (B, T, D_q).
        value: (B, S, D_v). Ignored when a cross-attention cache is given.
        key: (B, S, D_v); defaults to `value`.
        padding_mask: (B, S), true for real key tokens.
        attention_mask: (B, T, S), true where query t may see key s.
        use_causal_mask: whether query t (at absolute position
            `cache_index + t`) is kept from keys after it.
        cache: `(keys, values)`, (B, h, L, key_dim) and
            (B, h, L, value_dim), see above.
        cache_index: with `cache_update`, the absolute position of the
            first query token: where "write" writes, and the length of the
            cache "append" appends to.
        cache_update: None, "append" or "write", see above.
        return_attention_scores: also return the (B, h, T, S) probabilities
            (without a cache only).
        training: whether dropout is active.

    Returns:
        Without a cache, the output (B, T, output_dim), or with
        `return_attention_scores` the output and the (B, h, T, S)
        probabilities. With a cache, `(outputs, cache)`: the output and the
        cache after the update. `compute_output_shape` gives the same
        structure of shapes.

    Example:

    >>> layer = MultiHeadAttention(num_heads=2, key_dim=8)
    >>> x = np.random.rand(1, 5, 16).astype("float32")
    >>> tuple(layer(x, x, use_causal_mask=True).shape)
    (1, 5, 16)

    Decoding one token at a time with a cache that grows:

    >>> cache = layer.empty_cache(batch_size=1)
    >>> for t in range(5):
    ...     step, cache = layer(x[:, t : t + 1], x[:, t : t + 1], cache=cache,
    ...                         cache_index=t, cache_update="append")
    >>> tuple(cache[0].shape)
    (1, 2, 5, 8)
    """

    def __init__(
        self,
        num_heads,
        key_dim,
        value_dim=None,
        dropout=0.0,
        use_bias=True,
        output_dim=None,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, number in (("num_heads", num_heads), ("key_dim", key_dim)):
            if int(number) < 1:
                raise ValueError(f"{name} must be >= 1, got {number}.")
        if value_dim is not None and int(value_dim) < 1:
            raise ValueError(f"value_dim must be >= 1, got {value_dim}.")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}.")
        self.num_heads = int(num_heads)
        self.key_dim = int(key_dim)
        self.value_dim = int(value_dim) if value_dim else self.key_dim
        self.dropout = dropout
        self.use_bias = use_bias
        self.output_dim = output_dim
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True

        self.query_dense = self._dense(self.num_heads * self.key_dim, "query")
        self.key_value_dense = self._dense(
            self.num_heads * (self.key_dim + self.value_dim), "key_value"
        )
        self.output_dense = None  # width known in build()
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def _dense(self, units, name):
        return keras.layers.Dense(
            units,
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name=name,
        )

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        if key_shape is not None and key_shape[-1] != value_shape[-1]:
            raise ValueError(
                "key and value share the key_value projection, so they need "
                f"the same width; got key {key_shape} and value {value_shape}."
            )
        self.query_dense.build(query_shape)
        self.key_value_dense.build(value_shape)
        self.output_dense = self._dense(self.output_dim or query_shape[-1], "output")
        self.output_dense.build((*query_shape[:-1], self.num_heads * self.value_dim))
        self.built = True

    def _heads(self, dense, x, head_dim):
        """`dense` applied to (B, T, D), split into heads: (B, T, h, head_dim)."""
        projected = dense(x)  # (B, T, h * head_dim)
        return ops.reshape(projected, (-1, static_length(x), self.num_heads, head_dim))

    def empty_cache(self, batch_size, length=0):
        """A cache of zeros to start from: the one owner of its shapes.

        Args:
            batch_size: B, an int or scalar int tensor.
            length: L, an int or scalar int tensor: 0 for a cache that
                "append" grows, or the length of a buffer that "write"
                writes in place.

        Returns:
            `(keys, values)`, zeros (B, h, L, key_dim) and
            (B, h, L, value_dim) in the layer's compute dtype.

        Example:

        >>> layer = MultiHeadAttention(num_heads=2, key_dim=4, value_dim=3)
        >>> [tuple(part.shape) for part in layer.empty_cache(5, length=7)]
        [(5, 2, 7, 4), (5, 2, 7, 3)]
        """
        return tuple(
            ops.zeros((batch_size, self.num_heads, length, depth), self.compute_dtype)
            for depth in (self.key_dim, self.value_dim)
        )  # (B, h, L, K), (B, h, L, V)

    def compute_cache(self, value, key=None):
        """The keys and values of `value` (and `key`): a cache to attend over.

        Args:
            value: (B, S, D_v).
            key: (B, S, D_v); defaults to `value`.

        Returns:
            `(keys, values)`, (B, h, S, key_dim) and (B, h, S, value_dim).
        """
        head_dim = self.key_dim + self.value_dim
        key_values = self._heads(self.key_value_dense, value, head_dim)
        key_values = ops.transpose(key_values, (0, 2, 1, 3))  # (B, h, S, K + V)
        keys, values = ops.split(key_values, [self.key_dim], axis=-1)
        if key is not None and key is not value:
            keys = self._heads(self.key_value_dense, key, head_dim)[..., : self.key_dim]
            keys = ops.transpose(keys, (0, 2, 1, 3))
        return keys, values  # (B, h, S, K), (B, h, S, V)

    def call(
        self,
        query,
        value=None,
        key=None,
        padding_mask=None,
        attention_mask=None,
        use_causal_mask=False,
        cache=None,
        cache_index=None,
        cache_update=None,
        return_attention_scores=False,
        training=None,
    ):
        check_cache_arguments(cache, cache_index, cache_update, return_attention_scores)
        value = query if value is None else value
        if cache is None:
            keys_values = self.compute_cache(value, key)  # (B, h, S, K|V)
        elif cache_update is None:
            keys_values = cache  # attended as given
        else:
            new = self.compute_cache(value, key)  # (B, h, T, K|V)
            keys_values = update_cache(cache, new, cache_index, cache_update)
        queries = self._heads(self.query_dense, query, self.key_dim)  # (B, T, h, K)
        queries = queries * ops.cast(1.0 / math.sqrt(self.key_dim), queries.dtype)
        mask = merge_masks(
            ops.shape(query)[1],
            ops.shape(keys_values[0])[2],
            padding_mask=padding_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            query_offset=0 if cache_update is None else cache_index,
        )  # (B|1, 1, T, L) or None
        context, probabilities = self._attend(
            queries, keys_values, mask, training
        )  # (B, T, h * V), (B, h, T, L)
        outputs = self.output_dense(context)  # (B, T, D_out)
        if cache is not None:
            return outputs, keys_values
        if return_attention_scores:
            return outputs, probabilities
        return outputs

    def compute_output_shape(
        self,
        query_shape,
        value_shape=None,
        cache_shape=None,
        cache_update=None,
        return_attention_scores=False,
    ):
        """The shapes of what `call` returns, in the same structure: the
        output's (B, T, output_dim); with a `cache` (its shapes given as
        `cache_shape`), that and the cache's once the keys and values of
        `value` (B, S, D_v) have entered it; with `return_attention_scores`,
        that and the probabilities' (B, h, T, S).

        Example:

        >>> layer = MultiHeadAttention(num_heads=2, key_dim=4)
        >>> layer.compute_output_shape((None, 5, 16), (None, 7, 16),
        ...                            return_attention_scores=True)
        ((None, 5, 16), (None, 2, 5, 7))
        """
        batch, length = query_shape[:2]
        source_length = (value_shape or query_shape)[1]  # what enters a cache
        outputs_shape = (batch, length, self.output_dim or query_shape[-1])
        if cache_shape is not None:
            cache_shape = updated_cache_shape(cache_shape, source_length, cache_update)
            return outputs_shape, cache_shape
        if return_attention_scores:
            return outputs_shape, (batch, self.num_heads, length, source_length)
        return outputs_shape

    def compute_output_spec(
        self,
        query,
        value=None,
        key=None,
        *,
        cache=None,
        cache_update=None,
        return_attention_scores=False,
        **kwargs,  # masks, cache_index, training: they change no shape
    ):
        shapes = self.compute_output_shape(
            query.shape,
            None if value is None else value.shape,
            None if cache is None else tuple(part.shape for part in cache),
            cache_update,
            return_attention_scores,
        )
        return symbolic_outputs(shapes, self.compute_dtype)

    def _attend(self, queries, keys_values, mask, training):
        """Scaled dot-product attention of `queries` over keys and values.

        Args:
            queries: (B, T, h, K), already divided by sqrt(key_dim).
            keys_values: `(keys, values)`, (B, h, L, K) and (B, h, L, V).
            mask: boolean, broadcastable to (B, h, T, L), or None.
            training: whether dropout is active.

        Returns:
            The context (B, T, h * V) and the probabilities (B, h, T, L).
        """
        keys, values = keys_values  # (B, h, L, K|V)
        scores = ops.einsum("bthk,bhsk->bhts", queries, keys)  # (B, h, T, L)
        scores = ops.cast(scores, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, mask_fill_value(self.compute_dtype))
        if keys.shape[2] == 1:  # one key gets all the attention, masked or not
            # (`ops.softmax` warns that a softmax over one element is 1)
            probabilities = ops.ones_like(scores, dtype=self.compute_dtype)
        else:
            probabilities = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        dropped = self.dropout_layer(probabilities, training=training)
        context = ops.einsum("bhts,bhsv->bthv", dropped, values)  # (B, T, h, V)
        length = static_length(queries)
        context = ops.reshape(context, (-1, length, self.num_heads * self.value_dim))
        return context, probabilities

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_heads": self.num_heads,
                "key_dim": self.key_dim,
                "value_dim": self.value_dim,
                "dropout": self.dropout,
                "use_bias": self.use_bias,
                "output_dim": self.output_dim,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
