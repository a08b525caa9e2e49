"""Banned phrases in the SavedModel's graph: the table `PhraseSpellings`
builds is the library's `spelling_table` (tests/decoding/test_spellings.py
checks what the control does with it; tests/export/test_controlled.py that
the signatures ban phrases)."""

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.decoding.spellings import spelling_table
from keras_transformer.export.spellings import PhraseSpellings

pytestmark = pytest.mark.slow


def test_the_graph_builds_the_librarys_table(translator):
    tokenizer = translator.tokenizer
    vocab_size = translator.model.config.vocab_size
    spellings = PhraseSpellings(tokenizer, vocab_size, max_chars=12)
    phrases = [["c", "a b c", ""], ["", "", ""], ["e f g", "h", "b"]]
    ids = tokenizer.tokenize_target(tf.reshape(tf.constant(phrases), [-1]))
    built = spellings(tf.reshape(ids.to_tensor(-1), [3, 3, -1]))
    pieces = tokenizer.pieces()[1][:vocab_size]
    sequences = [row for row in ids.to_list() if row]
    expected = spelling_table(sequences, pieces, max_chars=12)
    given = np.array([text != "" for row in phrases for text in row])
    for name, none in (("table", -1), ("lengths", 0), ("begins_word", False)):
        rows = getattr(built, name).numpy()  # a set of phrases a row
        rows = rows.reshape(9, *getattr(expected, name).shape[1:])
        np.testing.assert_array_equal(rows[given], getattr(expected, name), name)
        assert (rows[~given] == none).all(), name
    assert expected.begins_word.all()  # phrases cut alone start with a word
    for name in ("piece_lengths", "piece_breaks"):  # the vocabulary's
        np.testing.assert_array_equal(getattr(built, name), getattr(expected, name))
    with pytest.raises(tf.errors.InvalidArgumentError, match="more than 12 char"):
        spellings(tokenizer.tokenize_target(["a b c d e f g"]).to_tensor(-1)[None])
