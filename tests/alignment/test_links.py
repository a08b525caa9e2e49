"""Hard word alignments and their error rate, against loops written out."""

import numpy as np
import pytest
from keras import ops

from keras_transformer.alignment import (
    alignment_attention,
    alignment_error_rate,
    format_pharaoh,
    parse_pharaoh,
    piece_roles,
    word_links,
    word_positions,
)
from keras_transformer.alignment.links import IN_WORD, NO_WORD, STARTS_WORD
from keras_transformer.special_ids import END_ID, PAD_ID

PIECES = ["<pad>", "<s>", "</s>", "<unk>", "\u2581a", "b", "\u2581", "<0xE2>"]


def reference_words(ids, roles):
    """`word_positions` of one row, piece by piece."""
    words, word = [], -1
    for position, piece in enumerate(ids):
        role = roles[piece]
        if role == NO_WORD:
            words.append(-1)
            continue
        if role == STARTS_WORD or position == 0:
            word += 1
        words.append(word)
    return words


def random_rows(rng, rows, length):
    """Rows of pieces, each then the end id and padding."""
    ids = np.full((rows, length), PAD_ID)
    for row in ids:
        size = rng.integers(0, length)
        row[:size] = rng.choice([3, 4, 5, 6, 7], size)
        row[size] = END_ID
    return ids


def test_piece_roles_mark_word_starts_and_tokens_outside_words():
    roles = piece_roles(PIECES)
    assert roles.tolist() == [NO_WORD] * 3 + [IN_WORD, STARTS_WORD, IN_WORD] + [
        STARTS_WORD,
        IN_WORD,
    ]


def test_word_positions_equal_a_loop_over_the_pieces():
    rng = np.random.default_rng(0)
    roles = piece_roles(PIECES)
    ids = random_rows(rng, 64, 9)
    words = ops.convert_to_numpy(word_positions(ids, roles))
    assert words.tolist() == [reference_words(row, roles) for row in ids]


def reference_links(attention, source_words, target_words, every_source_word):
    """`word_links` of one row, target piece by target piece, then (with
    `every_source_word`) the unlinked source words' pieces one by one."""
    links = np.zeros((len(source_words), len(target_words)), bool)
    sources = [s for s, word in enumerate(source_words) if word >= 0]
    targets = [t for t, word in enumerate(target_words) if word >= 0]
    for t in targets:
        if sources:
            best = max(sources, key=lambda s: attention[t, s])
            links[source_words[best], target_words[t]] = True
    unlinked = {source_words[s] for s in sources if not links[source_words[s]].any()}
    for s in sources:
        if every_source_word and source_words[s] in unlinked and targets:
            best = max(targets, key=lambda t: attention[t, s])
            links[source_words[s], target_words[best]] = True
    return links


@pytest.mark.parametrize("every_source_word", [True, False])
def test_word_links_equal_a_loop_over_the_pieces(every_source_word):
    rng = np.random.default_rng(1)
    roles = piece_roles(PIECES)
    source, target = random_rows(rng, 32, 7), random_rows(rng, 32, 6)
    source_words = ops.convert_to_numpy(word_positions(source, roles))
    target_words = ops.convert_to_numpy(word_positions(target, roles))
    attention = rng.random((32, 6, 7)).astype("float32")
    links = ops.convert_to_numpy(
        word_links(attention, source_words, target_words, every_source_word)
    )
    for row in range(32):
        expected = reference_links(
            attention[row], source_words[row], target_words[row], every_source_word
        )
        np.testing.assert_array_equal(links[row], expected, err_msg=str(row))
    unlinked = [  # rows with a target word and an unlinked source word
        row
        for row, words in enumerate(source_words)
        if (target_words[row] >= 0).any()
        and not links[row, : words.max() + 1].any(axis=1).all()
    ]
    assert bool(unlinked) != every_source_word


def test_alignment_attention_averages_the_first_heads_of_one_layer():
    attention = np.random.default_rng(2).random((2, 3, 4, 5, 6)).astype("float32")
    for layer, heads in ((-1, 0), (1, 1), (0, 3)):
        chosen = attention[:, layer, : heads or None].mean(axis=1)
        np.testing.assert_allclose(
            ops.convert_to_numpy(alignment_attention(attention, layer, heads)),
            chosen,
            rtol=1e-6,
        )


def test_pharaoh_lines_round_trip():
    links = np.random.default_rng(3).random((5, 4)) < 0.3
    sure, possible = parse_pharaoh(format_pharaoh(np.argwhere(links)))
    assert sure == {tuple(link) for link in np.argwhere(links)} and not possible


@pytest.mark.parametrize("line", ["0-1-2", "1", "a-b", "0p", "-1-0"])
def test_a_malformed_link_is_an_error_naming_it(line):
    with pytest.raises(ValueError, match="Not a word link"):
        parse_pharaoh(line)


def test_a_zero_in_a_gold_set_counting_from_one_is_an_error():
    with pytest.raises(ValueError, match="counting from 1"):
        parse_pharaoh("0-1", first_index=1)


def test_alignment_error_rate_of_known_cases():
    sure, possible = [{(0, 0), (1, 1)}], [{(1, 2)}]
    assert alignment_error_rate(sure, sure, possible) == 0
    assert alignment_error_rate([{(0, 0), (1, 1), (1, 2)}], sure, possible) == 0
    assert alignment_error_rate([{(0, 1)}], sure, possible) == 1
    # One sure hit of two, one possible hit: 1 - (1 + 2) / (3 + 2).
    rate = alignment_error_rate([{(0, 0), (1, 2), (2, 2)}], sure, possible)
    assert rate == pytest.approx(0.4)
    with pytest.raises(ValueError, match="one of each per sentence"):
        alignment_error_rate([], sure, possible)
