"""A target prefix typed as text, in the graph: what the SavedModel's
controlled signatures make of it.

The translator types the start of a translation; the search completes it
(`decoding.prefix` forces the pieces). Text is not pieces, so two rules
decide what is forced:

- Token healing: where the text ends inside a word (no whitespace at its
  end), its last piece is not forced, because the word may go on ("Haus"
  typed, "Hausaufgabe" meant). The first generated piece must instead
  begin with that piece's characters (`decoding.token_masks.AllowOnly`), so
  it is the same piece or a longer one.
- Where the text ends with whitespace, every piece is forced, and the next
  piece must start a word (SentencePiece's "\u2581"), or be the end token.
- A last piece that is the unknown piece (characters the vocabulary lacks)
  is forced, and any piece may follow.

The translation then begins with the text exactly as typed
(`begin_as_typed`): the tokenizer's normalization (spaces, NFKC) changes
what detokenizing the pieces gives back, so the typed text replaces that
part.
"""

import tensorflow as tf

from keras_transformer.special_ids import END_ID, PAD_ID, UNKNOWN_ID, WORD_START

_ENDS_WITH_SPACE = r"(?s).*\s"


class TypedPrefix:
    """Typed prefixes (B,) as decoding inputs: the forced pieces, and the
    pieces allowed at the first free step.

    Args:
        tokenizer: the translator's `SubwordTokenizer` or `MarianTokenizer`
            (`tokenize_target`, `detokenize`, `pieces`).
        vocab_size: the model's output ids, V.
        max_pieces: the most pieces forced; a longer prefix is cut there
            (and no piece healed), which `cut` reports.
    """

    def __init__(self, tokenizer, vocab_size, max_pieces):
        pieces = list(tokenizer.pieces()[1][:vocab_size])
        pieces += [""] * (vocab_size - len(pieces))
        self.tokenizer = tokenizer
        self.vocab = tf.constant(pieces)  # (V,), the target pieces by id
        self.max_pieces = max_pieces

    def __call__(self, texts):
        """The decoding inputs of typed prefixes `texts` (B,).

        Returns:
            A dict: "ids" int32 (B, P), the forced pieces, right-padded with
            0; "at" int32 (B,), how many pieces come before the step whose
            candidates "allowed" bool (B, V) lists (-1 for a row without a
            prefix); "cut" bool (B,), the rows whose prefix had more than
            `max_pieces` pieces.
        """
        ids = self.tokenizer.tokenize_target(texts)  # (B, None)
        counts = ids.row_lengths()  # (B,)
        cut = counts > self.max_pieces
        ids = ids[:, : self.max_pieces]
        counts = ids.row_lengths()
        ends_word = tf.strings.regex_full_match(texts, _ENDS_WITH_SPACE)
        last_id = _last_or_pad(ids)  # (B,)
        # An unknown piece stands for characters no piece begins with.
        heal = (counts > 0) & ~ends_word & ~cut & (last_id != UNKNOWN_ID)  # (B,)
        kept = counts - tf.cast(heal, counts.dtype)  # (B,)
        positions = tf.ragged.range(counts)  # (B, None)
        forced = tf.ragged.boolean_mask(ids, positions < kept[:, None])
        last = tf.gather(self.vocab, last_id)  # (B,)
        # What the next piece begins with: "" lets any piece come.
        wanted = tf.where(heal, last, tf.where(ends_word, WORD_START, ""))  # (B,)
        allowed = _begins_with(self.vocab, wanted)  # (B, V)
        is_end = tf.range(tf.shape(self.vocab)[0]) == END_ID  # (V,)
        allowed = allowed | (~heal[:, None] & is_end[None])
        free = tf.where((counts > 0) & ~cut, kept, -1)  # no prefix, or cut: none
        return {
            "ids": forced.to_tensor(PAD_ID),
            "at": tf.cast(free, tf.int32),
            "allowed": allowed,
            "cut": cut,
        }

    def begin_as_typed(self, texts, translations):
        """`translations` (B,) with the typed `texts` (B,) in place of the
        start that detokenizing their pieces gives; a translation that
        does not begin with it (its prefix was cut) is left as it is."""
        pieces = self.tokenizer.tokenize_target(texts)  # (B, None)
        kept = pieces.row_lengths() <= self.max_pieces
        detokenized = self.tokenizer.detokenize(pieces)  # (B,)
        length = tf.strings.length(detokenized)
        length = tf.minimum(length, tf.strings.length(translations))
        start = tf.strings.substr(translations, tf.zeros_like(length), length)
        begins = start == detokenized
        rest = tf.strings.substr(
            translations, length, tf.strings.length(translations) - length
        )
        ends_word = tf.strings.regex_full_match(texts, _ENDS_WITH_SPACE)
        rest = tf.where(ends_word, tf.strings.regex_replace(rest, r"^\s+", ""), rest)
        return tf.where(begins & kept, texts + rest, translations)


def _last_or_pad(ids):
    """The last id of each row of ragged `ids` (B, None), `PAD_ID` where empty."""
    limits = ids.row_limits()  # (B,)
    values = tf.concat([[PAD_ID], ids.values], axis=0)
    return tf.gather(values, tf.where(ids.row_lengths() > 0, limits, 0))


def _begins_with(vocab, wanted):
    """bool (B, V): whether piece v begins with `wanted[b]` (bytes)."""
    shape = tf.stack([tf.shape(wanted)[0], tf.shape(vocab)[0]])
    lengths = tf.broadcast_to(tf.strings.length(wanted)[:, None], shape)
    starts = tf.strings.substr(
        tf.broadcast_to(vocab[None], shape), tf.zeros_like(lengths), lengths
    )
    return starts == wanted[:, None]
