"""Phrases banned in every spelling (`SuppressSpellings`): each step against
a reference that joins the pieces as strings, and what greedy decoding, beam
search and sampling give with it (written for every Keras backend)."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_transformer.decoding.spellings import (
    SuppressSpellings,
    ends_word,
    spelling_table,
)
from tests.decoding.tables import END, START, random_tables
from tests.decoding.test_controls import (
    assert_compiled_beam_search_equals_eager,
    controlled_decoding,
    generated,
    outputs,
)

# Tokens 3 to 11; "aba" is spelled a+b+a, ab+a, a+ba and aba; "▁ab"
# (a word) also as "ab" right after "-" or "▁", which end a word.
PIECES = ["<pad>", "<s>", "</s>", "a", "b", "ab", "ba", "aba", "c", "▁a", "-", "▁"]
ABA, BB, CAB, WORD_AB = [7], [4, 4], [8, 5], [9, 4]


def spells(tokens, phrase):
    """Whether some run of `tokens` joins to the characters of `phrase`."""
    text = "".join(PIECES[token] for token in phrase)
    return any(
        "".join(PIECES[token] for token in tokens[start:end]) == text
        for start in range(len(tokens))
        for end in range(start + 1, len(tokens) + 1)
    )


def reference(logits, ids, index, phrases_of_row):
    """Rules out each token whose piece, after some of the last generated
    tokens, joins to a phrase of the row (without its word start right
    after a piece that ends a word)."""
    logits = logits.copy()
    for row, tokens in enumerate(ids):
        tokens = generated(tokens, index)
        for phrase in phrases_of_row[row]:
            text = "".join(PIECES[token] for token in phrase)
            for token in range(3, len(PIECES)):
                for start in range(len(tokens) + 1):
                    run = "".join(PIECES[piece] for piece in [*tokens[start:], token])
                    after_break = start > 0 and ends_word(PIECES[tokens[start - 1]])
                    if run == text or (
                        text[0] == "▁" and after_break and run == text[1:]
                    ):
                        logits[row, token] = -np.inf
    return logits


def per_item_control(phrases_of_item):
    """`SuppressSpellings` with its own phrases for each item, padded."""
    tables = [
        spelling_table(phrases, PIECES, max_chars=4) for phrases in phrases_of_item
    ]
    count = max(len(table.lengths) for table in tables)

    def padded(name, value):  # each item's phrases padded to `count`
        arrays = [getattr(table, name) for table in tables]
        return np.stack(
            [
                np.pad(
                    array,
                    [(0, count - len(array))] + [(0, 0)] * (array.ndim - 1),
                    constant_values=value,
                )
                for array in arrays
            ]
        )

    return SuppressSpellings(
        padded("table", -1),
        padded("lengths", 0),
        tables[0].piece_lengths,
        padded("begins_word", False),
        tables[0].piece_breaks,
    )


@pytest.mark.parametrize("index", [0, 1, 3, 6])
def test_each_step_rules_out_what_completes_a_phrase(index):
    rng = np.random.default_rng(index)
    logits = rng.normal(size=(6, len(PIECES))).astype("float32")
    ids = rng.integers(3, len(PIECES), size=(6, 8)).astype("int32")
    ids[:, 0] = START
    shared = SuppressSpellings(*spelling_table([ABA, BB, WORD_AB], PIECES))
    adjusted, _ = shared.adjust(logits, ids, index, shared.initial_state(6))
    expected = reference(logits, ids, index, [[ABA, BB, WORD_AB]] * 6)
    np.testing.assert_array_equal(ops.convert_to_numpy(adjusted), expected)
    # Three items of two beams each (beam k of item b at row 2 * b + k).
    items = [[ABA, WORD_AB], [BB, CAB], [CAB]]
    control = per_item_control(items)
    adjusted, _ = control.adjust(logits, ids, index, control.initial_state(6))
    expected = reference(logits, ids, index, [items[row // 2] for row in range(6)])
    np.testing.assert_array_equal(ops.convert_to_numpy(adjusted), expected)


@pytest.mark.parametrize("method", ["greedy", "beam", "sampler"])
def test_decoded_outputs_spell_no_phrase(method):
    tables = random_tables(4, len(PIECES), seed=3)
    tables[:, :, END] *= 0.1
    tables[:, :, [3, 4]] += 0.3  # "a" and "b" often: "aba" and "bb" come
    tables /= tables.sum(axis=-1, keepdims=True)
    control = SuppressSpellings(*spelling_table([ABA, BB], PIECES))
    ids, _ = controlled_decoding(method, tables, [control], [0, 1, 2, 3], 10)
    free, _ = controlled_decoding(method, tables, [], [0, 1, 2, 3], 10)
    for tokens in outputs(ids):
        assert not spells(tokens, ABA) and not spells(tokens, BB), tokens
    assert any(spells(tokens, ABA) or spells(tokens, BB) for tokens in outputs(free))


def test_no_phrases_change_nothing():
    tables = random_tables(2, len(PIECES), seed=7)
    spellings = spelling_table([ABA], PIECES)
    neutral = SuppressSpellings(*spellings._replace(lengths=np.zeros(1, "int32")))
    for method in ("greedy", "beam"):
        ids, scores = controlled_decoding(method, tables, [neutral], [0, 1], 8)
        free_ids, free_scores = controlled_decoding(method, tables, [], [0, 1], 8)
        np.testing.assert_array_equal(ids, free_ids)
        np.testing.assert_allclose(scores, free_scores, rtol=1e-6)


def test_bad_phrases_are_value_errors():
    with pytest.raises(ValueError, match="phrase is empty"):
        spelling_table([[3], []], PIECES)
    with pytest.raises(ValueError, match="more than max_chars=2"):
        spelling_table([ABA], PIECES, max_chars=2)
    with pytest.raises(ValueError, match=r"table must be \(N, C, D\)"):
        SuppressSpellings(np.zeros((2, 3), "int32"), np.zeros(2, "int32"), [0], [], [])


@pytest.mark.skipif(
    keras.backend.backend() == "torch", reason="no compiler on this backend"
)
def test_compiled_decoding_equals_eager():
    """One trace under `tf.function(jit_compile=True)` or `jax.jit`."""
    tables = random_tables(3, len(PIECES), seed=11)
    controls = [per_item_control([[ABA], [BB, CAB], [CAB]])]
    assert_compiled_beam_search_equals_eager(tables, controls)
