"""Per-step controls: each against a NumPy reference, and what greedy decoding,
beam search and sampling give with them (written for every Keras backend)."""

import keras
import keras_hub
import numpy as np
import pytest
from keras import ops

from keras_transformer.decoding import beam_search, greedy_decode
from keras_transformer.decoding.controls import (
    MinLength,
    NoRepeatNgram,
    RepetitionPenalty,
    initial_states,
    with_controls,
)
from keras_transformer.decoding.hub_sampling import sample
from keras_transformer.decoding.token_masks import AllowOnly, SuppressSequences
from tests.decoding.tables import END, START, bigram_next_fn, random_tables

VOCAB = 9  # 0 padding, 1 start, 2 end, 3..8 tokens


def generated(ids, index):
    """The tokens row `ids` generated up to column `index`."""
    return [int(token) for token in ids[1 : index + 1]]


def reference_repetition_penalty(logits, ids, index, penalty):
    logits = logits.copy()
    for row, tokens in enumerate(ids):
        for token in set(generated(tokens, index)):
            value, factor = logits[row, token], penalty[row]
            logits[row, token] = value * factor if value < 0 else value / factor
    return logits


def reference_no_repeat_ngram(logits, ids, index, sizes):
    logits = logits.copy()
    sizes = np.broadcast_to(sizes, len(ids))
    for row, (tokens, size) in enumerate(zip(ids, sizes, strict=True)):
        if size == 0:
            continue
        tokens = generated(tokens, index)
        last = tokens[len(tokens) - size + 1 :] if size > 1 else []
        for start in range(len(tokens) - size + 1):
            if size == 1 or tokens[start : start + size - 1] == last:
                logits[row, tokens[start + size - 1]] = -np.inf
    return logits


def reference_min_length(logits, ids, index, length):
    logits = logits.copy()
    logits[index < np.asarray(length), END] = -np.inf
    return logits


def reference_suppress(logits, ids, index, sequences):
    logits = logits.copy()
    for row, tokens in enumerate(ids):
        tokens = generated(tokens, index)
        for sequence in sequences:
            before = sequence[:-1]
            if not before or tokens[len(tokens) - len(before) :] == before:
                logits[row, sequence[-1]] = -np.inf
    return logits


def reference_allow_only(logits, ids, index, allowed, at):
    logits = logits.copy()
    for row in np.flatnonzero(np.asarray(at) == index):
        logits[row, ~allowed[row]] = -np.inf
    return logits


PER_ROW_PENALTY = np.array([1.5, 2.0, 0.8, 1.0, 3.0, 1.2], "float32")
PER_ROW_LENGTH = np.array([0, 2, 5, 7, 1, 3], "int32")
PER_ROW_NGRAM = np.array([0, 1, 2, 3, 2, 3], "int32")
SEQUENCES = [[4], [5, 6], [3, 3, 7]]
ALLOWED = np.random.default_rng(0).random((6, VOCAB)) < 0.4
ALLOWED[:, 3] = True  # every row allows a token
PER_ROW_AT = np.array([0, 1, 3, 6, -1, 3], "int32")
CONTROLS = {
    "repetition_penalty": (
        RepetitionPenalty(PER_ROW_PENALTY),
        lambda *args: reference_repetition_penalty(*args, PER_ROW_PENALTY),
    ),
    **{
        f"no_repeat_{size}gram": (
            NoRepeatNgram(size),
            lambda *args, size=size: reference_no_repeat_ngram(*args, size),
        )
        for size in (1, 2, 3)
    },
    "no_repeat_ngram_per_row": (
        NoRepeatNgram(PER_ROW_NGRAM, max_size=3),
        lambda *args: reference_no_repeat_ngram(*args, PER_ROW_NGRAM),
    ),
    "min_length": (
        MinLength(PER_ROW_LENGTH),
        lambda *args: reference_min_length(*args, PER_ROW_LENGTH),
    ),
    "suppress_sequences": (
        SuppressSequences(SEQUENCES),
        lambda *args: reference_suppress(*args, SEQUENCES),
    ),
    "allow_only": (
        AllowOnly(ALLOWED, PER_ROW_AT),
        lambda *args: reference_allow_only(*args, ALLOWED, PER_ROW_AT),
    ),
}


@pytest.mark.parametrize("name", CONTROLS)
@pytest.mark.parametrize("index", [0, 1, 3, 6])
def test_each_control_equals_its_numpy_reference(name, index):
    control, reference = CONTROLS[name]
    rng = np.random.default_rng(index)
    logits = rng.normal(size=(6, VOCAB)).astype("float32")
    # Few distinct tokens, so that repeats and matches happen; columns past
    # `index` hold tokens too, which no control may read.
    ids = rng.integers(3, 8, size=(6, 8)).astype("int32")
    ids[:, 0] = START
    adjusted, state = control.adjust(logits, ids, index, control.initial_state(6))
    np.testing.assert_allclose(
        ops.convert_to_numpy(adjusted), reference(logits, ids, index), rtol=1e-6
    )


def test_with_no_controls_the_step_function_is_unchanged():
    next_fn = bigram_next_fn(random_tables(1, VOCAB, seed=0))
    assert with_controls(next_fn, []) is next_fn


def controlled_decoding(method, tables, controls, table_indices, max_length, **kwargs):
    """(ids (B, N, L), scores) of `method` on bigram tables under `controls`."""
    table_indices = np.asarray(table_indices, "int32")
    arguments = dict(
        next_fn=with_controls(bigram_next_fn(tables), controls),
        start_ids=np.full(len(table_indices), START, "int32"),
        cache=(table_indices, initial_states(controls, len(table_indices)))
        if controls
        else table_indices,
        max_length=max_length,
        end_id=END,
    )
    if method == "greedy":
        ids, scores = greedy_decode(**arguments, **kwargs)
        return ops.convert_to_numpy(ids)[:, None], ops.convert_to_numpy(scores)
    if method == "sampler":
        ids = sample(keras_hub.samplers.TopKSampler(k=3, seed=0), **arguments)
        return ops.convert_to_numpy(ids)[:, None], None
    ids, scores = beam_search(**arguments, beam_size=3, num_results=3, **kwargs)
    return ops.convert_to_numpy(ids), ops.convert_to_numpy(scores)


def outputs(ids):
    """The token lists of (B, N, L) ids, each cut at its end token."""
    lists = []
    for row in ids.reshape(-1, ids.shape[-1]).tolist():
        lists.append(row[: row.index(END)] if END in row else row)
    return lists


def ngrams(tokens, size):
    starts = range(len(tokens) - size + 1)
    return [tuple(tokens[start : start + size]) for start in starts]


@pytest.mark.parametrize("method", ["greedy", "beam", "sampler"])
def test_decoded_outputs_obey_every_control(method):
    # Random tables that favour token 4 and end late: without controls the
    # outputs hold 4 and repeat n-grams.
    tables = random_tables(4, VOCAB, seed=3)
    tables[:, :, END] *= 0.1
    tables[:, :, 4] += 0.3
    tables /= tables.sum(axis=-1, keepdims=True)
    at = [1, 0, 2, 1]  # where each item's token must be 5, 7 or 8
    controls = [
        NoRepeatNgram(2),
        MinLength([3, 0, 5, 8]),
        SuppressSequences([[4], [5, 6]]),
        AllowOnly(np.isin(np.arange(VOCAB), [5, 7, 8]), at),
    ]
    ids, _ = controlled_decoding(method, tables, controls, [0, 1, 2, 3], max_length=10)
    free, _ = controlled_decoding(method, tables, [], [0, 1, 2, 3], max_length=10)
    for row, tokens in enumerate(outputs(ids)):
        assert len(set(ngrams(tokens, 2))) == len(ngrams(tokens, 2)), tokens
        assert len(tokens) >= [3, 0, 5, 8][row // ids.shape[1]], tokens
        assert 4 not in tokens and (5, 6) not in ngrams(tokens, 2), tokens
        assert tokens[at[row // ids.shape[1]]] in (5, 7, 8), tokens
    broken = [
        tokens
        for tokens in outputs(free)
        if 4 in tokens or len(set(ngrams(tokens, 2))) < len(ngrams(tokens, 2))
    ]
    assert broken  # the controls had something to do


@pytest.mark.parametrize("method", ["greedy", "beam"])
def test_a_batch_with_settings_per_item_decodes_as_its_items_alone(method):
    """Per-item state is tiled and reordered with the beams: each row of a
    batch decodes with its own penalty and minimum length, as it would alone."""
    tables = random_tables(3, VOCAB, seed=5)
    penalties, lengths = np.array([1.0, 3.0, 0.5], "float32"), [6, 0, 3]

    def controls(rows):
        return [RepetitionPenalty(penalties[rows]), MinLength(np.take(lengths, rows))]

    batch = controlled_decoding(method, tables, controls([0, 1, 2]), [0, 1, 2], 9)
    for row in range(3):
        alone = controlled_decoding(method, tables, controls([row]), [row], 9)
        np.testing.assert_array_equal(batch[0][row], alone[0][0])
        np.testing.assert_allclose(batch[1][row], alone[1][0], rtol=1e-5)


def test_a_penalty_of_one_and_no_bans_change_nothing():
    tables = random_tables(2, VOCAB, seed=7)
    # A sequence longer than any output never matches; a banned token would
    # change the scores (the log-softmax renormalizes without it).
    neutral = [RepetitionPenalty(1.0), MinLength(0), SuppressSequences([[3] * 9])]
    for method in ("greedy", "beam"):
        ids, scores = controlled_decoding(method, tables, neutral, [0, 1], 8)
        free_ids, free_scores = controlled_decoding(method, tables, [], [0, 1], 8)
        np.testing.assert_array_equal(ids, free_ids)
        np.testing.assert_allclose(scores, free_scores, rtol=1e-6)


def test_bad_settings_are_value_errors():
    with pytest.raises(ValueError, match="penalty must be > 0"):
        RepetitionPenalty(0.0)
    with pytest.raises(ValueError, match="size must be a positive int"):
        NoRepeatNgram(0)
    with pytest.raises(ValueError, match="max_size must be a positive int"):
        NoRepeatNgram(np.array([1, 2]))
    with pytest.raises(ValueError, match="Each size must be 0 to max_size=2"):
        NoRepeatNgram(np.array([1, 3]), max_size=2)
    with pytest.raises(ValueError, match="length must be >= 0"):
        MinLength([2, -1])
    with pytest.raises(ValueError, match="sequence is empty"):
        SuppressSequences([[3], []])
    with pytest.raises(ValueError, match="allow at least one token"):
        AllowOnly(np.array([[True, False], [False, False]]), at=0)


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="no compiler on this backend"
)
def test_compiled_decoding_with_controls_equals_eager():
    """One trace under `tf.function(jit_compile=True)` or `jax.jit`."""
    tables = random_tables(3, VOCAB, seed=11)
    controls = [
        RepetitionPenalty(np.array([1.2, 2.0, 1.0], "float32")),
        NoRepeatNgram(2),
        MinLength(2),
        SuppressSequences([[5, 6]]),
    ]

    assert_compiled_beam_search_equals_eager(tables, controls)


def assert_compiled_beam_search_equals_eager(tables, controls):
    """Beam search under `controls` on 3 items of `tables`, traced once by
    `tf.function(jit_compile=True)` or `jax.jit`, gives the eager tokens."""

    def run_tensors(table_indices):
        return beam_search(
            with_controls(bigram_next_fn(tables), controls),
            ops.full((3,), START, "int32"),
            (table_indices, initial_states(controls, 3)),
            8,
            END,
            beam_size=3,
            num_results=3,
        )

    if keras.backend.backend() == "jax":
        import jax

        compiled = jax.jit(run_tensors)
    else:
        import tensorflow as tf

        compiled = tf.function(run_tensors, jit_compile=True)
    indices = np.array([0, 1, 2], "int32")
    ids, scores = compiled(indices)
    eager_ids, eager_scores = controlled_decoding("beam", tables, controls, indices, 8)
    np.testing.assert_array_equal(ops.convert_to_numpy(ids), eager_ids)
    np.testing.assert_allclose(ops.convert_to_numpy(scores), eager_scores, rtol=1e-5)
