import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.layers.cache_products import (
    ELEMENTWISE_MAX_ROWS,
    cache_context,
    cache_scores,
    few_query_rows,
)


def random_inputs(batch, query_length, heads=2, length=5, channels=6, seed=0):
    rng = np.random.default_rng(seed)
    cache = rng.normal(size=(batch, heads, length, channels)).astype("float32")
    queries = rng.normal(size=(batch, query_length, heads, channels))
    probabilities = rng.random((batch, query_length, heads, length))
    probabilities /= probabilities.sum(-1, keepdims=True)
    return cache, queries.astype("float32"), probabilities.astype("float32")


@pytest.mark.parametrize("batch, query_length", [(1, 1), (3, 1), (1, 4), (2, 3)])
@pytest.mark.parametrize("elementwise", [True, False])
def test_both_ways_equal_the_reference(batch, query_length, elementwise):
    cache, queries, probabilities = random_inputs(batch, query_length)
    for choice in (elementwise, tf.constant(elementwise)):  # now, at run time
        np.testing.assert_allclose(
            cache_scores(cache, queries, choice),
            np.einsum("bhsk,bthk->bths", cache, queries),
            atol=1e-5,
        )
        np.testing.assert_allclose(
            cache_context(probabilities, cache, choice),
            np.einsum("bths,bhsk->bthk", probabilities, cache),
            atol=1e-5,
        )


def test_bfloat16_products_are_summed_in_float32():
    cache, queries, probabilities = random_inputs(1, 1, channels=256)
    cache, queries = tf.cast(cache, tf.bfloat16), tf.cast(queries, tf.bfloat16)
    exact = np.einsum(
        "bhsk,bthk->bths", *(np.float32(x) for x in (cache.numpy(), queries.numpy()))
    )
    scores = cache_scores(cache, queries, tf.constant(True))
    assert scores.dtype == tf.bfloat16
    # The float32 sum rounded once to bfloat16 (8 bits of mantissa).
    np.testing.assert_allclose(np.float32(scores), exact, rtol=2**-8, atol=1e-2)


def test_few_query_rows_counts_batch_times_queries():
    unknown_rows = tf.function(
        few_query_rows, input_signature=[tf.TensorSpec([None, None, 2, 6])]
    )
    for batch, query_length in [(1, 1), (4, 1), (1, 4), (2, 2), (5, 1), (2, 3)]:
        queries = tf.zeros((batch, query_length, 2, 6))
        expected = batch * query_length <= ELEMENTWISE_MAX_ROWS
        assert few_query_rows(queries) is expected  # known shape: a bool
        assert bool(unknown_rows(queries)) == expected


def test_one_traced_function_serves_every_batch_size():
    @tf.function(input_signature=[tf.TensorSpec([None, 2, 5, 6])])
    def scores(cache):
        queries = tf.ones((tf.shape(cache)[0], 1, 2, 6))
        queries = tf.ensure_shape(queries, [None, 1, 2, 6])
        return cache_scores(cache, queries, few_query_rows(queries))

    for batch in (1, ELEMENTWISE_MAX_ROWS + 3):
        cache, _, _ = random_inputs(batch, 1)
        expected = cache.sum(-1)[:, None]  # (B, 1, h, L)
        np.testing.assert_allclose(scores(cache), expected, atol=1e-5)
    assert scores.experimental_get_tracing_count() == 1
