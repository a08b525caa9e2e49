"""Multi-head scaled dot-product attention with a key/value cache."""

import math

import keras
from keras import ops

from keras_transformer.layers.masks import mask_fill_value, merge_masks


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention, section 3.2 of "Attention Is All You Need".

    Each of `num_heads` heads projects queries, keys and values to
    `key_dim` / `value_dim` channels, computes
    softmax(Q K^T / sqrt(key_dim)) V, and an output projection maps the
    concatenated heads back to the query width (or `output_dim`). Scores are
    normalised in float32 whatever the compute dtype, and masked scores are
    filled with a value that is finite in the compute dtype.

    Given the same weights, the output equals `keras.layers.MultiHeadAttention`
    (see `tests/layers/test_multi_head_attention.py` for the weight mapping).

    Incremental decoding uses a cache of shape (B, 2, L, num_heads, key_dim)
    holding keys (index 0) and values (index 1):

    - self-attention: pass `cache` and `cache_index`; the keys and values of
      the new query tokens are written at `cache_index` and the queries attend
      over the whole cache (combine with `use_causal_mask=True` so positions
      not yet written stay invisible). The updated cache is returned.
    - cross-attention: build the cache once with `compute_cache(value)` and
      pass it without `cache_index`; keys and values are not recomputed.

    Args:
        num_heads: number of heads h.
        key_dim: size of each query/key head d_k.
        value_dim: size of each value head d_v; defaults to `key_dim`.
        dropout: dropout rate on the attention probabilities, in [0, 1).
        use_bias: whether the four projections have biases.
        output_dim: width of the output; defaults to the query's width.
        kernel_initializer: initializer of the projection kernels.
        bias_initializer: initializer of the projection biases.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        query: (B, T, D_q).
        value: (B, S, D_v). Ignored when a cross-attention cache is given.
        key: (B, S, D_k); defaults to `value`.
        padding_mask: (B, S), true for real key tokens.
        attention_mask: (B, T, S), true where query t may see key s.
        use_causal_mask: whether query t (at absolute position
            `cache_index + t`) is kept from keys after it.
        cache: (B, 2, L, num_heads, key_dim) key/value cache.
        cache_index: where to write the new keys/values in `cache`.
        return_attention_scores: also return the (B, h, T, S) probabilities.
        training: whether dropout is active.

    Returns:
        The output (B, T, output_dim), followed by the attention
        probabilities if requested, followed by the updated cache if
        `cache_index` was given.

    Example:

    >>> layer = MultiHeadAttention(num_heads=2, key_dim=8)
    >>> x = np.random.rand(1, 5, 16).astype("float32")
    >>> tuple(layer(x, x, use_causal_mask=True).shape)
    (1, 5, 16)
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

        def dense(units, name):
            return keras.layers.Dense(
                units,
                use_bias=use_bias,
                kernel_initializer=self.kernel_initializer,
                bias_initializer=self.bias_initializer,
                dtype=self.dtype_policy,
                name=name,
            )

        self.query_dense = dense(self.num_heads * self.key_dim, "query")
        self.key_dense = dense(self.num_heads * self.key_dim, "key")
        self.value_dense = dense(self.num_heads * self.value_dim, "value")
        self.output_dense = None  # width known in build()
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        key_shape = value_shape if key_shape is None else key_shape
        self.query_dense.build(query_shape)
        self.key_dense.build(key_shape)
        self.value_dense.build(value_shape)
        self.output_dense = keras.layers.Dense(
            self.output_dim or query_shape[-1],
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name="output",
        )
        self.output_dense.build((*query_shape[:-1], self.num_heads * self.value_dim))
        self.built = True

    def _split_heads(self, x, head_dim):
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        return ops.reshape(x, (batch, length, self.num_heads, head_dim))  # (B, L, H, K)

    def compute_cache(self, value, key=None):
        """Keys and values of `value` as a (B, 2, S, H, K) cross-attention cache."""
        key = value if key is None else key
        keys = self._split_heads(self.key_dense(key), self.key_dim)  # (B, S, H, K)
        values = self._split_heads(self.value_dense(value), self.value_dim)
        return ops.stack([keys, values], axis=1)  # (B, 2, S, H, K)

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
        return_attention_scores=False,
        training=None,
    ):
        if cache is not None and cache_index is None:
            keys, values = cache[:, 0], cache[:, 1]  # precomputed cross-attention
        else:
            value = query if value is None else value
            key = value if key is None else key
            keys = self._split_heads(self.key_dense(key), self.key_dim)  # (B, S, H, K)
            values = self._split_heads(self.value_dense(value), self.value_dim)
            if cache is not None:
                start = [0, 0, cache_index, 0, 0]
                cache = ops.slice_update(
                    cache, start, ops.stack([keys, values], axis=1)
                )  # (B, 2, L, H, K)
                keys, values = cache[:, 0], cache[:, 1]

        queries = self._split_heads(
            self.query_dense(query), self.key_dim
        )  # (B, T, H, K)
        queries = queries * ops.cast(1.0 / math.sqrt(self.key_dim), queries.dtype)
        scores = ops.einsum("bthk,bshk->bhts", queries, keys)  # (B, H, T, S)

        mask = merge_masks(
            ops.shape(queries)[1],
            ops.shape(keys)[1],
            padding_mask=padding_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            query_offset=0 if cache_index is None else cache_index,
        )
        scores = ops.cast(scores, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, mask_fill_value(self.compute_dtype))
        probabilities = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        dropped = self.dropout_layer(probabilities, training=training)

        context = ops.einsum("bhts,bshk->bthk", dropped, values)  # (B, T, H, K)
        batch, length = ops.shape(context)[0], ops.shape(context)[1]
        context = ops.reshape(context, (batch, length, self.num_heads * self.value_dim))
        outputs = [self.output_dense(context)]  # (B, T, D_out)
        if return_attention_scores:
            outputs.append(probabilities)
        if cache is not None and cache_index is not None:
            outputs.append(cache)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

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
