"""Terminology constraints in beam search (dynamic beam allocation), on
bigram tables, against Python references (written for every Keras backend)."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.decoding import beam_search, decode
from keras_transformer.decoding.constraints import allocation_priority, phrases_found
from keras_transformer.scorings import SCORINGS
from tests.decoding.conftest import SOURCES
from tests.decoding.tables import (
    END,
    START,
    bigram_next_fn,
    length_penalty,
    random_tables,
)

VOCAB = 9  # 0 padding, 1 start, 2 end, 3..8 tokens
# Per item: phrases that must appear, -1 for padding (a row of -1: none).
PHRASES = np.array(
    [
        [[5, 6, -1], [7, -1, -1]],
        [[4, -1, -1], [-1, -1, -1]],
        [[8, 3, 8], [3, 8, -1]],  # overlapping phrases
    ],
    "int32",
)


def search(tables, indices, phrases, max_length=9, start_ids=None, **kwargs):
    ids, scores = beam_search(
        bigram_next_fn(tables),
        [START] * len(indices) if start_ids is None else start_ids,
        np.array(indices, "int32"),
        max_length,
        END,
        constraints=phrases,
        **kwargs,
    )
    return ops.convert_to_numpy(ids), ops.convert_to_numpy(scores)


def tokens_of(row):
    """A generated row cut after its end token, or before its padding."""
    row = list(map(int, row))
    return row[: row.index(END) + 1] if END in row else [t for t in row if t != 0]


def contains(tokens, phrase):
    phrase = [int(piece) for piece in phrase if piece >= 0]
    starts = range(len(tokens) - len(phrase) + 1)
    return any(tokens[start : start + len(phrase)] == phrase for start in starts)


def test_phrases_found_equals_a_python_search():
    rng = np.random.default_rng(0)
    tokens = rng.integers(3, 6, size=(3, 4, 7)).astype("int32")
    phrases = rng.integers(3, 6, size=(3, 5, 3)).astype("int32")
    phrases[rng.random((3, 5, 3)) < 0.3] = -1
    phrases = np.sort(phrases, axis=-1)[..., ::-1]  # -1 padding last
    found = ops.convert_to_numpy(phrases_found(tokens, phrases))
    for b, n, c in np.ndindex(found.shape):
        assert found[b, n, c] == contains(list(tokens[b, n]), phrases[b, c])


def test_allocation_takes_each_banks_best_in_turn_fullest_first():
    log_p = np.array([[-1.0, -2.0, -3.0, -4.0, -5.0, -np.inf]], "float32")
    banks = np.array([[0, 0, 2, 0, 2, 1]], "int32")
    priority = ops.convert_to_numpy(allocation_priority(log_p, banks))[0]
    assert priority[-1] == -np.inf  # no candidate
    np.testing.assert_array_equal(np.argsort(-priority)[:5], [2, 0, 4, 1, 3])


@pytest.mark.parametrize("scoring", SCORINGS)
def test_outputs_hold_every_phrase_and_score_their_tokens(scoring):
    """The best output of each item holds its phrases (the end token was
    ruled out until then), and its score is its tokens' log-probability
    over the length penalty (an end token forced at the limit, as the
    "transformers" scoring forces it, counting as certain)."""
    tables = random_tables(3, VOCAB, seed=1)
    ids, scores = search(tables, [0, 1, 2], PHRASES, beam_size=3, scoring=scoring)
    free, _ = search(tables, [0, 1, 2], None, beam_size=3, scoring=scoring)
    lacking = 0
    for item in range(3):
        tokens = tokens_of(ids[item, 0])
        assert all(contains(tokens, phrase) for phrase in PHRASES[item]), tokens
        free_tokens = tokens_of(free[item, 0])
        lacking += not all(contains(free_tokens, p) for p in PHRASES[item])
        pairs = list(zip([START, *tokens[:-1]], tokens, strict=True))
        if scoring == "transformers" and len(tokens) == 9:
            pairs = pairs[:-1]  # the forced end
        log_p = sum(math.log(tables[item, p, t]) for p, t in pairs)
        normalizer = (
            length_penalty(len(tokens), 0.6)
            if scoring == "gnmt"
            else len(tokens) ** 0.6
        )
        assert scores[item, 0] == pytest.approx(log_p / normalizer, rel=1e-5)
    assert lacking  # the constraints had something to do


def test_without_phrases_the_search_is_unchanged():
    tables = random_tables(3, VOCAB, seed=2)
    none = np.full((3, 2, 3), -1, "int32")
    constrained = search(tables, [0, 1, 2], none, beam_size=3, num_results=2)
    free = search(tables, [0, 1, 2], None, beam_size=3, num_results=2)
    np.testing.assert_array_equal(constrained[0], free[0])
    np.testing.assert_allclose(constrained[1], free[1], rtol=1e-6)


def test_a_batch_decodes_as_its_items_alone():
    """However many phrases the other rows bring (padding), each row keeps
    its own results."""
    tables = random_tables(3, VOCAB, seed=4)
    ids, scores = search(tables, [0, 1, 2], PHRASES, beam_size=3, num_results=3)
    for item in range(3):
        own = PHRASES[item : item + 1, : 2 - (item == 1)]  # without the padding
        alone_ids, alone_scores = search(
            tables, [item], own, beam_size=3, num_results=3
        )
        np.testing.assert_array_equal(ids[item], alone_ids[0])
        np.testing.assert_allclose(scores[item], alone_scores[0], rtol=1e-5)


def test_phrases_that_do_not_fit_the_limit_still_give_a_translation():
    """A row whose phrases cannot all fit ends at its limit; hypotheses
    with every phrase come first."""
    tables = random_tables(2, VOCAB, seed=6)
    phrases = np.array([[[5, 6, 7]], [[4, -1, -1]]], "int32")
    ids, scores = search(
        tables, [0, 1], phrases, max_length=4, beam_size=2, max_lengths=[2, 4]
    )
    assert np.isfinite(scores).all()
    found = ops.convert_to_numpy(phrases_found(ids, phrases))[:, 0, 0]
    np.testing.assert_array_equal(found, [False, True])
    assert len(tokens_of(ids[0, 0])) == 2 and END not in ids[0, 0]


def test_a_phrase_in_the_prefix_is_met():
    """A phrase the given tokens already hold asks nothing more: the search
    goes on as it would without it."""
    tables = random_tables(1, VOCAB, seed=8)
    prefix = np.array([[START, 5, 6]], "int32")
    phrases = np.array([[[5, 6]]], "int32")
    kwargs = dict(beam_size=2, max_length=7)
    with_phrase = search(tables, [0], phrases, start_ids=prefix, **kwargs)
    without = search(tables, [0], None, start_ids=prefix, **kwargs)
    np.testing.assert_array_equal(with_phrase[0], without[0])


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="no compiler on this backend"
)
def test_compiled_constrained_search_equals_eager():
    """Fixed shapes: one trace under `tf.function(jit_compile=True)` or
    `jax.jit`."""
    tables = random_tables(3, VOCAB, seed=9)

    def run(indices, phrases):
        return beam_search(
            bigram_next_fn(tables),
            ops.full((3,), START, "int32"),
            indices,
            9,
            END,
            beam_size=3,
            num_results=2,
            constraints=phrases,
        )

    if keras.backend.backend() == "jax":
        import jax

        compiled = jax.jit(run)
    else:
        import tensorflow as tf

        compiled = tf.function(run, jit_compile=True)
    indices = np.array([0, 1, 2], "int32")
    ids, scores = compiled(indices, PHRASES)
    eager_ids, eager_scores = run(indices, PHRASES)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(ids), ops.convert_to_numpy(eager_ids)
    )
    np.testing.assert_allclose(
        ops.convert_to_numpy(scores), ops.convert_to_numpy(eager_scores), rtol=1e-5
    )


def test_decode_with_constraints_runs_beam_search_even_at_width_one(model):
    phrases = np.array([[[7, 8]], [[9, -1]], [[-1, -1]]], "int32")
    ids, _ = decode(model, SOURCES, beam_size=1, extra_length=4, constraints=phrases)
    found = ops.convert_to_numpy(phrases_found(ids, phrases))
    assert found.all()
    with pytest.raises(ValueError, match="constraints need beam search"):
        decode(model, SOURCES, sampler="greedy", constraints=phrases)
