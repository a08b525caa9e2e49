"""Phrases that are never generated, however the pieces spell them.

A subword vocabulary spells most words in several ways: "▁snow" + "er",
"▁s" + "now" + "er", "▁snower". `token_masks.SuppressSequences` rules out
one sequence of tokens; `SuppressSpellings` rules out every sequence whose
pieces join to the phrase's characters (a banned term of a glossary).

The phrases come as a table of which token spells which characters of
each phrase (`spelling_table` builds it from token sequences and the
vocabulary's pieces; the SavedModel builds the same in its graph). Each
step reads the last generated tokens back (nothing is kept in the loop
state, so a prefix's tokens count as generated ones do) and follows them
through the table: the positions of the phrase that some spelling has
reached by the last token, then the tokens that would complete it from
there, which are ruled out.
"""

import typing

import numpy as np
from keras import ops

from keras_transformer.decoding.controls import StepControl, ban, row_token_pairs
from keras_transformer.special_ids import END_ID, PAD_ID, START_ID, WORD_START


class SuppressSpellings(StepControl):
    """Phrases that are never generated, in any spelling by the vocabulary's
    pieces: a token is ruled out where, with tokens generated just before
    it, its piece would complete a phrase's characters.

    Args:
        table: int (N, C, D), or one set per item (B, N, C, D):
            `table[..., n, i, k]` is the token whose piece is characters
            `i` to `i + k` (`k + 1` characters) of phrase `n`, -1 where no
            piece is. C is the most characters of a phrase, D of a piece.
        lengths: int (N,) or (B, N): the characters of each phrase, 0 for
            none.
        piece_lengths: int (V,): the characters of each token's piece, 0
            for tokens that spell nothing (padding, start, end).
        begins_word: bool (N,) or (B, N): the phrases that begin with
            SentencePiece's word start "\u2581". Such a phrase is also ruled
            out without it right after a piece that `piece_breaks` marks:
            "\u2581mails" in "e-mails" ("\u2581e" + "-" + "mails").
        piece_breaks: bool (V,): the pieces whose last character ends a
            word (`ends_word`).

    Like `AllowOnly`, the table is not part of the loop state: beams of an
    item share it (beam k of item b at row b * K + k).

    Example: with pieces "a", "b", "ab" (tokens 3 to 5), "ab" is banned as
    the token 5 and as 3 then 4:

    >>> pieces = ["<pad>", "<s>", "</s>", "a", "b", "ab"]
    >>> control = SuppressSpellings(*spelling_table([[5]], pieces))
    >>> ids = np.array([[1, 4, 3, 0]], "int32")  # "b" then "a" generated
    >>> logits, _ = control.adjust(np.zeros((1, 6)), ids, 2, control.initial_state(1))
    >>> np.flatnonzero(ops.convert_to_numpy(logits)[0] == -np.inf)
    array([4, 5])
    """

    def __init__(self, table, lengths, piece_lengths, begins_word, piece_breaks):
        if len(table.shape) not in (3, 4) or len(lengths.shape) != len(table.shape) - 2:
            raise ValueError(
                "table must be (N, C, D) or (B, N, C, D) and lengths (N,) or "
                f"(B, N), got {tuple(table.shape)} and {tuple(lengths.shape)}."
            )
        self.table = table
        self.lengths = lengths
        self.piece_lengths = piece_lengths
        self.begins_word = begins_word
        self.piece_breaks = piece_breaks

    def is_active(self, index, state):
        return ops.any(ops.convert_to_tensor(self.lengths) > 0)

    def adjust(self, logits, ids, index, state):
        table = ops.cast(self.table, "int32")
        lengths = ops.cast(self.lengths, "int32")
        if len(table.shape) == 3:  # the same phrases for every item
            table, lengths = table[None], lengths[None]
        chars, longest = table.shape[2], table.shape[3]  # C, D: static
        items, count = ops.shape(table)[0], ops.shape(table)[1]  # B, N
        rows = ops.shape(ids)[0]  # B' = B * K
        per_item = rows // items
        begins_word = ops.cast(self.begins_word, "bool")
        begins_word = begins_word[None] if len(begins_word.shape) == 1 else begins_word
        begins_word = ops.repeat(begins_word, per_item, axis=0)[:, :, None]
        breaks = ops.cast(self.piece_breaks, "bool")  # (V,)
        flat_table = ops.reshape(table, (items, -1))  # (B, N * C * D)
        starts = ops.arange(chars, dtype="int32")  # (C,): i
        cells = (ops.arange(count, dtype="int32")[:, None] * chars + starts) * longest

        def spelled(sizes):
            """The token of characters [i, i + size) of each phrase, for
            sizes (B', N, C) in 1..D: (B', N, C)."""
            at = cells[None] + ops.clip(sizes - 1, 0, longest - 1)  # (B', N, C)
            at = ops.reshape(at, (items, -1))  # the rows of each item together
            found = ops.take_along_axis(flat_table, at, axis=1)
            return ops.reshape(found, (rows, count, chars))

        # The longest phrase of the batch, L, needs the last L - 1 tokens.
        window = ops.max(lengths) - 1

        def follow(offset, reached):
            """`reached` (B', N, C), the phrase positions spellings have
            reached, after the token `offset` of the last `window`."""
            column = index - window + 1 + offset
            token = ops.take(ids, ops.maximum(column, 0), axis=1)  # (B',)
            token = ops.where(column >= 1, token, -1)  # none generated there
            size = ops.take(
                ops.cast(self.piece_lengths, "int32"), ops.maximum(token, 0)
            )
            size = ops.where(token >= 0, size, 0)[:, None, None]  # (B', 1, 1)
            fits = (size >= 1) & (size <= longest)
            sizes = ops.broadcast_to(size, (rows, count, chars))
            moved = reached & fits & (spelled(sizes) == token[:, None, None])
            source = starts - size  # (B', 1, C): from where position j is reached
            padded = ops.concatenate([moved, ops.zeros_like(moved[..., :1])], -1)
            source = ops.where(source >= 0, source, chars)
            source = ops.broadcast_to(source, ops.shape(moved))
            after_break = ops.take(breaks, ops.maximum(token, 0)) & (token >= 0)
            entered = (starts == 0) | (
                (starts == 1) & after_break[:, None, None] & begins_word
            )
            return ops.take_along_axis(padded, source, axis=2) | entered

        start = ops.broadcast_to(starts == 0, (rows, count, chars))
        reached = ops.fori_loop(0, window, follow, start)  # (B', N, C)
        remaining = ops.repeat(lengths, per_item, axis=0)[:, :, None] - starts
        completing = spelled(remaining)  # (B', N, C)
        banned = reached & (remaining >= 1) & (remaining <= longest) & (completing >= 0)
        pairs = row_token_pairs(ops.reshape(ops.maximum(completing, 0), (rows, -1)))
        return ban(logits, pairs, ops.reshape(banned, (-1,))), state


class Spellings(typing.NamedTuple):
    """`SuppressSpellings`' arguments, as `spelling_table` gives them."""

    table: np.ndarray  # int32 (N, C, D)
    lengths: np.ndarray  # int32 (N,)
    piece_lengths: np.ndarray  # int32 (V,)
    begins_word: np.ndarray  # bool (N,)
    piece_breaks: np.ndarray  # bool (V,)


def ends_word(piece):
    """Whether the last character of `piece` ends a word: it is neither a
    letter, a digit, an apostrophe nor "_" ("-", "/", "(" and the word
    start "\u2581" do).

    >>> ends_word("e-"), ends_word("ab"), ends_word("'")
    (True, False, False)
    """
    return bool(piece) and not (piece[-1].isalnum() or piece[-1] in "'\u2019_")


def spelling_table(sequences, pieces, max_chars=None):
    """`SuppressSpellings`' arguments for phrases given as token sequences.

    Args:
        sequences: a list of token id lists, one spelling of each phrase.
        pieces: the vocabulary's pieces (str) by token id.
        max_chars: C, the most characters of a phrase (default: the
            longest given); a longer phrase is a ValueError.

    Returns:
        A `Spellings`: the table of which token spells which characters,
        each phrase's characters, each piece's characters, which phrases
        begin a word, and which pieces end one.

    Example:

    >>> pieces = ["<pad>", "<s>", "</s>", "a", "b", "ab"]
    >>> spellings = spelling_table([[5]], pieces)
    >>> spellings.table[0]  # "a" is 3 and "ab" 5 at character 0, "b" is 4 at 1
    array([[ 3,  5],
           [ 4, -1]], dtype=int32)
    """
    token_of, piece_lengths = {}, np.zeros(len(pieces), "int32")
    piece_breaks = np.zeros(len(pieces), bool)
    for token, piece in enumerate(pieces):
        if token not in (PAD_ID, START_ID, END_ID) and piece not in token_of:
            token_of[piece] = token
            piece_lengths[token] = len(piece)
            piece_breaks[token] = ends_word(piece)
    texts = ["".join(pieces[token] for token in sequence) for sequence in sequences]
    if not all(texts):
        raise ValueError("A suppressed phrase is empty.")
    longest_text = max(map(len, texts), default=1)
    max_chars = longest_text if max_chars is None else max_chars
    if longest_text > max_chars:
        raise ValueError(f"A phrase has more than max_chars={max_chars} characters.")
    longest = int(piece_lengths.max(initial=1))
    table = np.full((len(texts), max_chars, longest), -1, "int32")
    for n, text in enumerate(texts):
        for i in range(len(text)):
            for size in range(1, min(longest, len(text) - i) + 1):
                table[n, i, size - 1] = token_of.get(text[i : i + size], -1)
    lengths = np.array([len(text) for text in texts], "int32")
    begins_word = np.array([text.startswith(WORD_START) for text in texts], bool)
    return Spellings(table, lengths, piece_lengths, begins_word, piece_breaks)
