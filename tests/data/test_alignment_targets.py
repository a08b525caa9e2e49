import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.alignment import piece_roles, word_positions
from keras_transformer.data.alignment_targets import (
    alignment_targets,
    pharaoh_links,
    piece_words,
)

RNG = np.random.default_rng(0)
# ids 0-2 special, 3 unknown, 4-7 start words, 8-9 continue them
ROLES = piece_roles(["<pad>", "<s>", "</s>", "<unk>"] + ["\u2581w"] * 4 + ["x"] * 2)


def random_sequence(length):
    ids = RNG.integers(3, len(ROLES), size=length)
    return np.concatenate([ids, [2]]).astype("int32")  # pieces, then the end


@pytest.mark.parametrize("length", [1, 2, 7])
def test_piece_words_are_word_positions(length):
    for _ in range(20):
        ids = random_sequence(length)
        np.testing.assert_array_equal(
            piece_words(tf.constant(ids), tf.constant(ROLES)),
            np.asarray(word_positions(ids[None], ROLES))[0],
        )


def test_pieces_are_linked_when_their_words_are():
    """Against the rule written out: entry [t, s] is 1 exactly when
    (word of source s, word of label t) is a link, links past the words
    the sequences hold (cut by truncation) left out."""
    for _ in range(30):
        source, labels = random_sequence(6), random_sequence(5)
        source_words = np.asarray(word_positions(source[None], ROLES))[0]
        target_words = np.asarray(word_positions(labels[None], ROLES))[0]
        links = {(int(i), int(j)) for i, j in RNG.integers(0, 8, size=(5, 2))}
        line = " ".join(f"{i}-{j}" for i, j in sorted(links))
        matrix = alignment_targets(
            tf.constant(line),
            tf.constant(source),
            tf.constant(labels),
            tf.constant(ROLES),
            tf.constant(ROLES),
        ).numpy()
        expected = [
            [float(s >= 0 and t >= 0 and (s, t) in links) for s in source_words]
            for t in target_words
        ]
        np.testing.assert_array_equal(matrix, expected)


def test_an_empty_line_links_nothing():
    matrix = alignment_targets(
        tf.constant(""),
        tf.constant(random_sequence(3)),
        tf.constant(random_sequence(2)),
        tf.constant(ROLES),
        tf.constant(ROLES),
    )
    assert matrix.shape == (3, 4) and not np.any(matrix)


def test_a_line_that_is_not_pharaoh_is_an_error():
    with pytest.raises(tf.errors.InvalidArgumentError, match="0-x"):
        pharaoh_links(tf.constant("0-0 0-x"))
