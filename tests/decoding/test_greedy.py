import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_transformer.decoding import greedy_decode
from keras_transformer.decoding.greedy import most_likely
from tests.decoding.tables import (
    END,
    ENDLESS_TABLE,
    HAND_TABLE,
    LATE_END_TABLE,
    START,
    A,
    B,
    assert_compiled_as_eager,
    bigram_next_fn,
    padded,
    random_tables,
)


def greedy(tables, table_indices, max_length, calls=None, **kwargs):
    ids, scores = greedy_decode(
        bigram_next_fn(tables, calls),
        start_ids=[START] * len(table_indices),
        cache=np.array(table_indices, "int32"),
        max_length=max_length,
        end_id=END,
        **kwargs,
    )
    return ops.convert_to_numpy(ids), ops.convert_to_numpy(scores)


def test_takes_the_most_likely_token_and_sums_log_probabilities():
    ids, scores = greedy(HAND_TABLE[None], [0], max_length=5)
    np.testing.assert_array_equal(ids, [padded([A, END], 5)])
    np.testing.assert_allclose(scores, [math.log(0.55) + math.log(0.5)], rtol=1e-6)


@pytest.mark.tensorflow
def test_writes_only_padding_after_the_end_and_stops_once_all_ended():
    calls = tf.Variable(0)
    ids, _ = greedy(np.stack([HAND_TABLE, LATE_END_TABLE]), [0, 1], 8, calls)
    np.testing.assert_array_equal(ids, [padded([A, END], 8), padded([A, B, END], 8)])
    assert int(calls.numpy()) == 3  # the longest sequence has three tokens


def test_max_lengths_end_sequences_and_a_batch_equals_its_items_alone():
    tables = np.stack([ENDLESS_TABLE, HAND_TABLE, *random_tables(3, 5, seed=0)])
    limits = [1, 3, 2, 6, 4]
    ids, scores = greedy(tables, range(5), max_length=6, max_lengths=limits)
    for row, limit in enumerate(limits):
        assert not ids[row, limit:].any()
        alone_ids, alone_scores = greedy(tables, [row], max_length=limit)
        np.testing.assert_array_equal(ids[row], padded(alone_ids[0], 6))
        np.testing.assert_allclose(scores[row], alone_scores[0], rtol=1e-6)
    np.testing.assert_array_equal(ids[0], padded([A], 6))  # ended by its limit


def greedy_on_tables():
    """`run(table_indices, limits)`: greedy decoding of random tables."""
    next_fn = bigram_next_fn(random_tables(4, 6, seed=1))

    def run(table_indices, limits):
        start_ids = ops.full(ops.shape(table_indices), START, "int32")
        return greedy_decode(
            next_fn, start_ids, table_indices, 7, END, max_lengths=limits
        )

    return run


@pytest.mark.tensorflow
def test_traces_once_and_compiles_with_xla():
    run = greedy_on_tables()
    vector = tf.TensorSpec([None], tf.int32)
    traced = tf.function(run, input_signature=[vector, vector])
    assert_compiled_as_eager(run, traced, tf.function(run, jit_compile=True))
    assert traced.experimental_get_tracing_count() == 1


@pytest.mark.tensorflow
@pytest.mark.parametrize("jit_compile", [False, True])
def test_most_likely_equals_argmax_and_log_softmax(jit_compile):
    logits = np.random.default_rng(2).normal(size=(6, 50)).astype("float32") * 5
    logits[1, [3, 7, 40]] = 30.0  # a tie: the first index wins, as in argmax
    logits[2] = -np.inf
    logits[2, 9] = 0.0
    tokens, log_probs = tf.function(most_likely, jit_compile=jit_compile)(logits)
    expected = tf.nn.log_softmax(logits)
    np.testing.assert_array_equal(tokens, np.argmax(logits, axis=-1))
    np.testing.assert_allclose(log_probs, np.max(expected, axis=-1), atol=1e-6)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(max_length=0), "max_length must be a positive int, got 0"),
        (dict(max_length=4, max_lengths=[2, 0]), "max_lengths must be a positive"),
    ],
)
def test_rejects_bad_lengths(arguments, message):
    with pytest.raises(ValueError, match=message):
        greedy(HAND_TABLE[None], [0, 0], **arguments)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX backend's")
def test_compiles_with_jax_jit():
    import jax

    run = greedy_on_tables()
    assert_compiled_as_eager(run, jax.jit(run))
