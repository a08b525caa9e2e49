"""The two products of attention through a key/value cache, sized per call.

A decoding step multiplies the queries by the whole cache twice, for the
scores and for the context. As einsums these are one op each (plus an axis
swap where the query axis is not statically 1), but on a CPU each einsum
(a oneDNN kernel) costs about 70 us even at one query row, where its
arithmetic takes a few microseconds. Up to
`ELEMENTWISE_MAX_ROWS` query rows a broadcast multiply and a sum are
cheaper; beyond that the einsum is (README, "Decoding speed"). Where the
number of query rows is known when tracing, the choice is made then;
otherwise at run time, so that one traced function serves every batch
size.
"""

import tensorflow as tf
from keras import ops

from keras_transformer.layers.shapes import swap_axes_1_and_2

# Query rows (B * T') up to which the products are elementwise; measured
# on a 2-core AMD EPYC: a pair of products at 1, 2 and 4 rows took 41, 55
# and 96 us elementwise against 157, 184 and 152 us as einsums, and at 8
# rows 397 against 231.
ELEMENTWISE_MAX_ROWS = 4


def few_query_rows(queries):
    """Whether `queries` (B, T', h, C) has at most `ELEMENTWISE_MAX_ROWS` rows.

    A Python bool where B and T' are known when tracing. Otherwise a boolean
    scalar tensor (h and C must be known): the row count is read from the
    size, one op at every decoding step instead of five.
    """
    batch, query_length, heads, channels = queries.shape
    if batch is not None and query_length is not None:
        return batch * query_length <= ELEMENTWISE_MAX_ROWS
    return tf.size(queries) <= ELEMENTWISE_MAX_ROWS * heads * channels


def cache_scores(cache, queries, elementwise):
    """Dot products of each query with each cached key: (B, T', h, L).

    Scores keep the queries' layout, query axis before heads, so that the
    elementwise way moves no data: a transpose is a oneDNN kernel on a CPU,
    as costly per call as the einsum. The einsum's own layout has heads
    first; it swaps the axes, free where T' is statically 1.

    Args:
        cache: (B, h, L, C).
        queries: (B, T', h, C).
        elementwise: a bool or boolean scalar tensor, from `few_query_rows`.

    Example:

    >>> cache = tf.ones((1, 2, 3, 4))  # 2 heads, 3 positions, 4 channels
    >>> queries = tf.ones((1, 1, 2, 4))  # one query
    >>> scores = cache_scores(cache, queries, few_query_rows(queries))
    >>> tuple(scores.shape), float(scores[0, 0, 0, 0])
    ((1, 1, 2, 3), 4.0)
    """

    def multiply_and_sum():
        products = _float32(cache)[:, None] * _float32(queries)[:, :, :, None]
        return tf.cast(tf.reduce_sum(products, axis=-1), cache.dtype)

    return _either(
        elementwise,
        multiply_and_sum,
        lambda: swap_axes_1_and_2(tf.einsum("bhsk,bthk->bhts", cache, queries)),
    )  # (B, T', h, L)


def cache_context(probabilities, cache, elementwise):
    """The cached rows weighted by `probabilities`: (B, T', h, C).

    Args:
        probabilities: (B, T', h, L).
        cache: (B, h, L, C).
        elementwise: a bool or boolean scalar tensor, from `few_query_rows`.
    """

    def multiply_and_sum():
        spread = _float32(probabilities)[..., None]  # (B, T', h, L, 1)
        if probabilities.shape[1] != 1:
            # Spread over the channels first: a multiply that broadcasts
            # only over the queries took half the time of one that also
            # broadcasts the innermost axis (4 query rows, e.g. 4 beams).
            spread = tf.broadcast_to(
                spread, (*ops.shape(probabilities), cache.shape[-1])
            )  # (B, T', h, L, C)
        weighted = spread * _float32(cache)[:, None]
        return tf.cast(tf.reduce_sum(weighted, axis=3), cache.dtype)

    return _either(
        elementwise,
        multiply_and_sum,
        lambda: tf.einsum("bhts,bhsk->bthk", swap_axes_1_and_2(probabilities), cache),
    )  # (B, T', h, C)


def _either(elementwise, multiply_and_sum, einsum):
    """One way, chosen now for a bool or by a `tf.cond` for a tensor."""
    if isinstance(elementwise, bool):
        return multiply_and_sum() if elementwise else einsum()
    return tf.cond(elementwise, multiply_and_sum, einsum)


def _float32(x):
    """`x` in float32: sums of bfloat16 or float16 products lose digits."""
    return x if x.dtype == tf.float32 else tf.cast(x, tf.float32)
