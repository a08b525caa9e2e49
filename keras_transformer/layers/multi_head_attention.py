"""Multi-head scaled dot-product attention with a key/value cache."""

import math

import keras
import numpy as np
from keras import ops

from keras_transformer.layers.masks import mask_fill_value, merge_masks
from keras_transformer.layers.shapes import swap_axes_1_and_2, unflatten_rows


def write_positions(cache, updates, index):
    """Each tensor of `cache`, (B, h, L, d), with the matching one of
    `updates`, (B, h, T, d), at positions index + t.

    A scatter rather than `ops.slice_update`: on TensorFlow that is
    `XlaDynamicUpdateSlice`, which outside `jit_compile` runs as an XLA
    program compiled on demand, slower per decoding step and an op that
    TensorFlow Serving cannot run without XLA (tensorflow/serving#2217).
    Its indices are sums of broadcast ranges (fewer ops than a meshgrid
    where the batch size is unknown when tracing), flattened to the (N, 3)
    rows that `ops.scatter_update` takes on every backend.
    """
    batch, heads, length = ops.shape(updates[0])[:3]
    rows = ops.reshape(ops.arange(batch), (-1, 1, 1, 1)) * np.array([1, 0, 0])
    head = ops.reshape(ops.arange(heads), (1, -1, 1, 1)) * np.array([0, 1, 0])
    positions = ops.reshape(ops.arange(length) + index, (1, 1, -1, 1))
    indices = rows + head + positions * np.array([0, 0, 1])  # (B, h, T, 3)
    rows = ops.reshape(indices, (-1, 3))  # (B * h * T, 3)
    return tuple(
        ops.scatter_update(tensor, rows, ops.reshape(new, (-1, new.shape[-1])))
        for tensor, new in zip(cache, updates, strict=True)  # (B * h * T, d)
    )


@keras.saving.register_keras_serializable(package="keras_transformer")
class MultiHeadAttention(keras.layers.Layer):
    """Multi-head attention, section 3.2 of "Attention Is All You Need".

    Each of `num_heads` heads projects queries, keys and values to
    `key_dim` / `value_dim` channels, computes
    softmax(Q K^T / sqrt(key_dim)) V, and an output projection maps the
    concatenated heads back to the query width (or `output_dim`). Scores are
    normalised in float32 whatever the compute dtype, and masked scores are
    filled with a value that is finite in the compute dtype.

    Keys and values come from one fused projection, `key_value`, whose
    kernel (D_v, h * (key_dim + value_dim)) holds for each head its key
    columns then its value columns; queries have their own, `query`
    (D_q, h * key_dim). Self-attention thus costs two matmuls instead of
    three, and a cross-attention cache one. Given the same weights, the
    output equals
    `keras.layers.MultiHeadAttention` (see
    `tests/layers/test_multi_head_attention.py` for the weight mapping).

    Keys and values live in a cache `(keys, values)` of shapes
    (B, num_heads, L, key_dim) and (B, num_heads, L, value_dim): two
    tensors, so that no decoding step splits a fused buffer. Without a
    cache (training, teacher forcing) one is computed from `value`;
    incremental decoding passes its own:

    - self-attention: pass `cache` and `cache_index`; the keys and values of
      the new query tokens are written at `cache_index` and the queries attend
      over the whole cache (combine with `use_causal_mask=True` so positions
      not yet written stay invisible). The updated cache is returned. With
      `grow_cache=True` the cache holds only the `cache_index` positions
      written so far, and the new keys and values are appended to it: no
      step copies or attends over unwritten positions, but the cache's
      length changes, which XLA cannot compile (use fixed buffers there).
    - cross-attention: build the cache once with `compute_cache(value)` and
      pass it without `cache_index`; keys and values are not recomputed. The
      cache may have one row per source item while `query` has K rows per
      item (beam k of item b at row b * K + k): the K rows then attend
      together over their item's keys and values (folded into the query
      axis), so beam search never tiles or reorders the cache. With such a
      cache only `padding_mask` (B, S) applies.

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
            (B, h, L, value_dim).
        cache_index: where to write the new keys/values in `cache`.
        grow_cache: with `cache_index`, append the new keys and values to a
            cache of `cache_index` positions instead of writing them into a
            fixed buffer.
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
        self.key_value_dense = dense(
            self.num_heads * (self.key_dim + self.value_dim), "key_value"
        )
        self.output_dense = None  # width known in build()
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="attention_dropout"
        )

    def build(self, query_shape, value_shape=None, key_shape=None):
        value_shape = query_shape if value_shape is None else value_shape
        if key_shape is not None and key_shape[-1] != value_shape[-1]:
            raise ValueError(
                "key and value share the key_value projection, so they need "
                f"the same width; got key {key_shape} and value {value_shape}."
            )
        self.query_dense.build((None, query_shape[-1]))
        self.key_value_dense.build((None, value_shape[-1]))
        self.output_dense = keras.layers.Dense(
            self.output_dim or query_shape[-1],
            use_bias=self.use_bias,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name="output",
        )
        self.output_dense.build((None, self.num_heads * self.value_dim))
        self.built = True

    def _project(self, dense, x, head_dim, batch=None, length=None):
        """`dense` on (B', T, D) as one 2-D matmul, split into heads.

        Returns (B', T, h, head_dim), or with `batch` = B dividing B' and
        `length` = B' / B * T (or -1), (B, length, h, head_dim): each group
        of B' / B consecutive rows folded into the length axis.
        """
        flat = dense(ops.reshape(x, (-1, x.shape[-1])))  # (B' * T, h * head_dim)
        if batch is None:
            return unflatten_rows(flat, x, (self.num_heads, head_dim))
        return ops.reshape(flat, (batch, length, self.num_heads, head_dim))

    def _scaled_queries(self, query, batch=None, length=None):
        """Queries of `query` divided by sqrt(key_dim): (B', T, h, K), or
        (batch, length, h, K) folded as in `_project`."""
        queries = self._project(self.query_dense, query, self.key_dim, batch, length)
        return queries * ops.cast(1.0 / math.sqrt(self.key_dim), queries.dtype)

    def compute_cache(self, value, key=None):
        """Keys and values of `value`, (B, h, S, K) and (B, h, S, V): a
        cross-attention cache."""
        head_dim = self.key_dim + self.value_dim
        key_values = self._project(
            self.key_value_dense, value, head_dim
        )  # (B, S, h, K + V)
        keys, values = ops.split(key_values, [self.key_dim], axis=-1)
        if key is not None and key is not value:
            keys = self._project(self.key_value_dense, key, head_dim)
            keys = keys[..., : self.key_dim]  # (B, S, h, K)
        return swap_axes_1_and_2(keys), swap_axes_1_and_2(values)

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
        grow_cache=False,
        return_attention_scores=False,
        training=None,
    ):
        value = query if value is None else value
        query_offset = 0
        folds_queries = cache is not None and cache_index is None
        if cache is None:
            cache = self.compute_cache(value, key)  # (B, h, S, K|V)
            queries = self._scaled_queries(query)  # (B, T, h, K)
        elif cache_index is None:  # cross-attention: B' / B query rows per item
            queries = self._scaled_queries(
                query, ops.shape(cache[0])[0], -1
            )  # (B, T', h, K), T' = B' / B * T
        else:  # self-attention: write the new keys and values first
            new = self.compute_cache(value, key)  # (B, h, T, K|V)
            if grow_cache:
                cache = tuple(
                    ops.concatenate(pair, axis=2)
                    for pair in zip(cache, new, strict=True)
                )  # (B, h, cache_index + T, K|V)
            else:
                cache = write_positions(cache, new, cache_index)
            queries = self._scaled_queries(query)  # (B, T, h, K)
            query_offset = cache_index
        mask = merge_masks(
            ops.shape(queries)[1],
            ops.shape(cache[0])[2],
            padding_mask=padding_mask,
            attention_mask=attention_mask,
            use_causal_mask=use_causal_mask,
            query_offset=query_offset,
        )  # (B|1, 1, T', L) or None
        context, probabilities = self._attend(
            queries, cache, mask, training
        )  # (B * T', h * V), (B, h, T', L)
        outputs = [unflatten_rows(self.output_dense(context), query)]  # (B', T, D_out)
        if return_attention_scores:
            if folds_queries:
                probabilities = self._per_query_row(probabilities, query)
            outputs.append(probabilities)  # (B', h, T, L)
        if cache_index is not None:
            outputs.append(cache)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _attend(self, queries, cache, mask, training):
        """Scaled dot-product attention of `queries` over the keys and values
        of `cache`.

        Args:
            queries: (B, T', h, K), already divided by sqrt(key_dim).
            cache: `(keys, values)`, (B, h, L, K) and (B, h, L, V).
            mask: boolean, broadcastable to (B, h, T', L), or None.
            training: whether dropout is active.

        Returns:
            The context (B * T', h * V) and the probabilities (B, h, T', L).
        """
        keys, values = cache  # (B, h, L, K|V)
        scores = ops.einsum("bthk,bhsk->bhts", queries, keys)  # (B, h, T', L)
        scores = ops.cast(scores, "float32")
        if mask is not None:
            scores = ops.where(mask, scores, mask_fill_value(self.compute_dtype))
        if keys.shape[2] == 1:  # one key gets all the attention, masked or not
            # (`ops.softmax` warns that a softmax over one element is 1)
            probabilities = ops.ones_like(scores, dtype=self.compute_dtype)
        else:
            probabilities = ops.cast(ops.softmax(scores, axis=-1), self.compute_dtype)
        dropped = self.dropout_layer(probabilities, training=training)
        context = ops.einsum("bhts,bhsv->bthv", dropped, values)  # (B, T', h, V)
        context = ops.reshape(context, (-1, self.num_heads * self.value_dim))
        return context, probabilities

    def _per_query_row(self, probabilities, query):
        """(B, h, T', L) probabilities as (B', h, T, L), one row per query
        row, where a cross-attention cache folded B' / B query rows per item
        into T'."""
        rows, length = ops.shape(query)[:2]  # B', T
        batch, heads, _, key_length = ops.shape(probabilities)
        folded = ops.reshape(
            probabilities, (batch, heads, -1, length, key_length)
        )  # (B, h, B' / B, T, L)
        per_row = ops.transpose(folded, (0, 2, 1, 3, 4))  # (B, B' / B, h, T, L)
        return ops.reshape(per_row, (rows, heads, length, key_length))

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
