"""Banned phrases in the graph: which piece spells which characters of each
phrase, the table that `decoding.spellings.SuppressSpellings` takes.

`decoding.spellings.spelling_table` builds the same table in NumPy for the
library (and is what the tests compare this one with); here it is built from
each request's phrases, with the vocabulary in a lookup table that the
SavedModel keeps.
"""

import numpy as np
import tensorflow as tf

from keras_transformer.decoding.spellings import Spellings, spelling_table
from keras_transformer.special_ids import WORD_START

MAX_PHRASE_CHARS = 48  # the most characters of a banned phrase, as its pieces spell it


class PhraseSpellings(tf.Module):
    """Phrases as pieces (B, N, M) -> `SuppressSpellings`' table and lengths.

    Args:
        tokenizer: the translator's tokenizer (`pieces`).
        vocab_size: the model's output ids, V.
        max_chars: C, the most characters of a phrase; a longer one fails
            the call with an InvalidArgumentError that says so.

    Attributes:
        piece_lengths: int32 (V,), the characters of each token's piece;
        piece_breaks: bool (V,), the pieces that end a word.
    """

    def __init__(self, tokenizer, vocab_size, max_chars=MAX_PHRASE_CHARS):
        super().__init__(name="phrase_spellings")
        pieces = list(tokenizer.pieces()[1][:vocab_size])
        pieces += [""] * (vocab_size - len(pieces))
        vocabulary = spelling_table([], pieces)
        piece_lengths = vocabulary.piece_lengths
        spelling = np.flatnonzero(piece_lengths)  # the tokens that spell something
        self._tokens = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant([pieces[token] for token in spelling]),
                tf.constant(spelling, tf.int32),
            ),
            default_value=-1,
        )
        self._pieces = tf.constant(pieces)  # (V,)
        self.piece_lengths = tf.constant(piece_lengths)  # (V,)
        self.piece_breaks = tf.constant(vocabulary.piece_breaks)  # (V,)
        self.max_chars = max_chars
        self.longest = int(piece_lengths.max(initial=1))  # D

    def __call__(self, ids):
        """`ids` int32 (B, N, M): each phrase's pieces, padded with -1 (a row
        of -1 only is none).

        Returns:
            A `decoding.spellings.Spellings` of tensors, as `spelling_table`
            gives it, with a set of phrases per row: table int32
            (B, N, C, D), lengths int32 (B, N) (0 for none), begins_word
            bool (B, N).
        """
        pieces = tf.where(ids >= 0, tf.gather(self._pieces, tf.maximum(ids, 0)), "")
        texts = tf.strings.reduce_join(pieces, axis=-1)  # (B, N)
        lengths = tf.strings.length(texts, unit="UTF8_CHAR")  # (B, N)
        check = tf.debugging.assert_less_equal(
            lengths,
            self.max_chars,
            f"a banned phrase has more than {self.max_chars} characters",
        )
        shape = tf.concat([tf.shape(texts), [self.max_chars, self.longest]], 0)
        starts = tf.broadcast_to(tf.range(self.max_chars)[:, None], shape)
        sizes = tf.broadcast_to(tf.range(1, self.longest + 1), shape)
        inside = starts + sizes <= lengths[..., None, None]
        substrings = tf.strings.substr(
            tf.broadcast_to(texts[..., None, None], shape),
            tf.minimum(starts, lengths[..., None, None]),  # past the end: ""
            sizes,
            unit="UTF8_CHAR",
        )  # (B, N, C, D)
        with tf.control_dependencies([check]):
            table = tf.where(inside, self._tokens.lookup(substrings), -1)
        begins_word = tf.strings.substr(texts, 0, 1, unit="UTF8_CHAR") == WORD_START
        return Spellings(
            table, lengths, self.piece_lengths, begins_word, self.piece_breaks
        )
