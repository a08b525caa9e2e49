import math

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops

from keras_transformer.decoding import beam_search, greedy_decode, length_penalty
from keras_transformer.scorings import SCORINGS
from tests.decoding.tables import (
    COSTLY_PREFIX_TABLE,
    END,
    HAND_TABLE,
    SHORT_OR_LONG_TABLE,
    START,
    A,
    B,
    assert_compiled_as_eager,
    bigram_next_fn,
    exhaustive_search,
    padded,
    random_tables,
)


def search(tables, table_indices, max_length, calls=None, **kwargs):
    ids, scores = beam_search(
        bigram_next_fn(tables, calls),
        start_ids=[START] * len(table_indices),
        cache=np.array(table_indices, "int32"),
        max_length=max_length,
        end_id=END,
        **kwargs,
    )
    return ops.convert_to_numpy(ids), ops.convert_to_numpy(scores)


def test_length_penalty_is_the_gnmt_formula():
    lengths = np.arange(1, 10)
    np.testing.assert_allclose(
        length_penalty(lengths, 0.6), ((5 + lengths) / 6) ** 0.6, rtol=1e-6
    )


def test_finds_a_better_sequence_than_greedy_with_hand_computed_scores():
    greedy_ids, _ = greedy_decode(
        bigram_next_fn(HAND_TABLE[None]), [START], np.array([0], "int32"), 5, END
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(greedy_ids), [padded([A, END], 5)]
    )

    ids, scores = search(HAND_TABLE[None], [0], 5, beam_size=4, num_results=3)
    np.testing.assert_array_equal(
        ids[0], [padded([B, END], 5), padded([A, END], 5), padded([A, B, END], 5)]
    )
    penalty_2, penalty_3 = (7 / 6) ** 0.6, (8 / 6) ** 0.6
    expected = [
        math.log(0.45 * 0.95) / penalty_2,
        math.log(0.55 * 0.5) / penalty_2,
        math.log(0.55 * 0.2 * 0.95) / penalty_3,
    ]
    np.testing.assert_allclose(scores[0], expected, rtol=1e-5)


def test_transformers_scoring_divides_by_the_length_and_forces_the_end():
    table = SHORT_OR_LONG_TABLE[None]
    ids, scores = search(table, [0], 4, beam_size=2, alpha=1.0)
    np.testing.assert_array_equal(ids[0], [padded([END], 4)])
    np.testing.assert_allclose(scores[0], [math.log(0.5)], rtol=1e-5)

    ids, scores = search(
        table, [0], 4, beam_size=2, alpha=1.0, num_results=2, scoring="transformers"
    )
    # Steps 2 and 3 finish A, END and A, A, END (-1.06, -0.83): both
    # slots are full, but the best alive A, A, A scores -1.63 / 3 = -0.54
    # at the current length, so the search goes on to the forced end.
    np.testing.assert_array_equal(ids[0], [[A, A, A, END], padded([END], 4)])
    expected = [math.log(0.4 * 0.7 * 0.7) / 4, math.log(0.5) / 1]
    np.testing.assert_allclose(scores[0], expected, rtol=1e-5)


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_a_beam_wider_than_all_prefixes_equals_exhaustive_search(alpha):
    # Length 3 over 5 tokens: at most 4 * 5 = 20 candidates before the last
    # step, so a beam of 20 prunes nothing that could be among the best 5.
    tables = random_tables(2, 5, seed=2)
    ids, scores = search(
        tables, [0, 1], 3, beam_size=20, alpha=alpha, num_results=5
    )  # each item reads its own table through the tiled, reordered cache
    for item, table in enumerate(tables):
        expected = exhaustive_search(table, 3, alpha, num_results=5)
        np.testing.assert_array_equal(
            ids[item], [padded(tokens, 3) for tokens, _ in expected]
        )
        np.testing.assert_allclose(
            scores[item], [score for _, score in expected], rtol=1e-5
        )


@pytest.mark.parametrize("scoring", SCORINGS)
def test_a_prefix_is_given_not_ranked(scoring):
    """The scores and the length penalty count the tokens after a prefix:
    its cost does not push the search on past a likely end."""
    ids, scores = beam_search(
        bigram_next_fn(COSTLY_PREFIX_TABLE[None]),
        start_ids=np.array([[START, B, B]]),
        cache=np.array([0], "int32"),
        max_length=6,
        end_id=END,
        beam_size=2,
        alpha=1.0,
        num_results=2,
        scoring=scoring,
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(ids)[0, 0], padded([B, B, END], 6)
    )
    np.testing.assert_array_equal(
        ops.convert_to_numpy(ids)[0, 1], padded([B, B, A, END], 6)
    )
    expected = [math.log(0.6), math.log(0.39 * 0.9) / 2.0]  # n ** 1 for "transformers"
    if scoring == "gnmt":
        expected[1] = math.log(0.39 * 0.9) / length_penalty(2.0, 1.0)
    np.testing.assert_allclose(ops.convert_to_numpy(scores)[0], expected, rtol=1e-5)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_beam_size_1_without_length_penalty_equals_greedy(seed):
    tables = random_tables(6, 6, seed=seed)
    greedy_ids, greedy_scores = greedy_decode(
        bigram_next_fn(tables), [START] * 6, np.arange(6, dtype="int32"), 8, END
    )
    ids, scores = search(tables, range(6), 8, beam_size=1, alpha=0.0)
    np.testing.assert_array_equal(ids[:, 0], ops.convert_to_numpy(greedy_ids))
    np.testing.assert_array_equal(scores[:, 0], ops.convert_to_numpy(greedy_scores))


@pytest.mark.tensorflow
def test_writes_only_padding_after_the_end_and_stops_early():
    calls = tf.Variable(0)
    ids, _ = search(HAND_TABLE[None], [0], 10, calls, beam_size=4)
    np.testing.assert_array_equal(ids, [[padded([B, END], 10)]])
    # After two steps B END scores -0.78; the best alive prefix (A A, .165)
    # can at most reach log(.165) / lp(10) = -1.04.
    assert int(calls.numpy()) == 2


def test_max_lengths_end_sequences_and_a_batch_equals_its_items_alone():
    tables = random_tables(4, 5, seed=6)
    limits = [1, 3, 5, 2]
    ids, scores = search(
        tables, range(4), 5, beam_size=3, num_results=2, max_lengths=limits
    )
    for item, limit in enumerate(limits):
        assert not ids[item, :, limit:].any()
        alone_ids, alone_scores = search(
            tables, [item], limit, beam_size=3, num_results=2
        )
        np.testing.assert_array_equal(
            ids[item], [padded(row, 5) for row in alone_ids[0]]
        )
        np.testing.assert_allclose(scores[item], alone_scores[0], rtol=1e-6)


def search_on_tables(scoring):
    """`run(table_indices, limits)`: a beam search of random tables."""
    next_fn = bigram_next_fn(random_tables(4, 6, seed=7))

    def run(table_indices, limits):
        start_ids = ops.full(ops.shape(table_indices), START, "int32")
        return beam_search(
            next_fn,
            start_ids,
            table_indices,
            7,
            END,
            3,
            0.6,
            2,
            max_lengths=limits,
            scoring=scoring,
        )

    return run


@pytest.mark.tensorflow
@pytest.mark.parametrize("scoring", SCORINGS)
def test_traces_once_and_compiles_with_xla(scoring):
    run = search_on_tables(scoring)
    vector = tf.TensorSpec([None], tf.int32)
    traced = tf.function(run, input_signature=[vector, vector])
    assert_compiled_as_eager(run, traced, tf.function(run, jit_compile=True))
    assert traced.experimental_get_tracing_count() == 1


@pytest.mark.tensorflow
def test_the_step_function_sees_the_row_count_known_when_tracing():
    rows_seen = []
    next_fn = bigram_next_fn(random_tables(4, 6, seed=7))

    def recording_next_fn(ids, cache, index):
        rows_seen.append(ids.shape[0])
        return next_fn(ids, cache, index)

    def run(table_indices):
        start_ids = tf.fill(tf.shape(table_indices), START)
        return beam_search(recording_next_fn, start_ids, table_indices, 5, END, 3)

    tf.function(run).get_concrete_function(tf.TensorSpec([2], tf.int32))
    tf.function(run).get_concrete_function(tf.TensorSpec([None], tf.int32))
    assert rows_seen == [2 * 3, None]


@pytest.mark.parametrize(
    "arguments, message",
    [
        (dict(beam_size=0), "beam_size must be a positive int, got 0"),
        (dict(beam_size=2, num_results=3), "num_results must be <= beam_size=2"),
        (dict(alpha=-0.5), "alpha must be >= 0, got -0.5"),
        (dict(scoring="average"), "scoring must be one of"),
        (dict(max_lengths=[3, -1]), "max_lengths must be a positive int, got -1"),
    ],
)
def test_rejects_bad_arguments(arguments, message):
    with pytest.raises(ValueError, match=message):
        search(HAND_TABLE[None], [0, 0], 4, **arguments)


@pytest.mark.skipif(keras.backend.backend() != "jax", reason="the JAX backend's")
@pytest.mark.parametrize("scoring", SCORINGS)
def test_compiles_with_jax_jit(scoring):
    import jax

    run = search_on_tables(scoring)
    assert_compiled_as_eager(run, jax.jit(run))
