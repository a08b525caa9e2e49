"""Hard word alignments: which source words each target word came from.

A word is what a reader sees between spaces: a piece that starts with
SentencePiece's `WORD_START` begins one, and the pieces after it, up to
the next such piece, belong to it. Each target piece is linked to the
source piece it attends to most, in one layer's cross-attention averaged
over some of its heads (the layer and heads a model's config names,
`TransformerConfig.alignment_layer` and `alignment_heads`, as fairseq's
and CTranslate2's alignments do), and a target word is linked to each
source word that one of its pieces is linked to. The padding, start and
end tokens belong to no word and are never linked.

Keras ops throughout, so the links are computed on any backend and inside
an exported signature.
"""

import numpy as np
from keras import ops

from keras_transformer.decoding.loops import take_per_row
from keras_transformer.special_ids import END_ID, PAD_ID, START_ID, WORD_START

# A piece's role in `piece_roles`: the first piece of a word, a later one,
# or a token that belongs to no word.
STARTS_WORD, IN_WORD, NO_WORD = 1, 0, -1


def piece_roles(pieces):
    """Each piece's role in words, by id: int32 (V,) for `word_positions`.

    Args:
        pieces: the vocabulary's pieces, a list of str by id (a
            tokenizer's `pieces()` gives the source's and the target's).

    Returns:
        int32 (V,): `STARTS_WORD` for a piece that begins with
        `WORD_START`, `NO_WORD` for the padding, start and end ids,
        `IN_WORD` for the rest (the unknown piece and byte pieces
        included: they continue the word before them).

    Example:

    >>> piece_roles(["<pad>", "<s>", "</s>", "<unk>", "\u2581Da", "tei", "\u2581"])
    array([-1, -1, -1,  0,  1,  0,  1], dtype=int32)
    """
    roles = [
        STARTS_WORD if piece.startswith(WORD_START) else IN_WORD for piece in pieces
    ]
    for special in (PAD_ID, START_ID, END_ID):
        if special < len(roles):
            roles[special] = NO_WORD
    return np.asarray(roles, "int32")


def word_positions(ids, roles):
    """The word each piece of `ids` belongs to: its index among the words.

    The first piece of a sequence starts a word even without
    `WORD_START`, so every piece of a word has a word to belong to.

    Args:
        ids: int (B, L) pieces, without the start token, as an encoder
            reads a source or forced decoding a target.
        roles: int32 (V,) from `piece_roles`.

    Returns:
        int32 (B, L): 0 for the first word's pieces, 1 for the second's,
        ...; -1 for the tokens that belong to no word.

    Example:

    >>> roles = piece_roles(["<pad>", "<s>", "</s>", "<unk>", "\u2581a", "b"])
    >>> ops.convert_to_numpy(word_positions(np.array([[5, 4, 5, 4, 2, 0]]), roles))
    array([[ 0,  1,  1,  2, -1, -1]], dtype=int32)
    """
    role = ops.take(ops.convert_to_tensor(roles, "int32"), ops.cast(ids, "int32"))
    in_word = role != NO_WORD  # (B, L)
    first = ops.arange(ops.shape(role)[1], dtype="int32")[None, :] == 0  # (1, L)
    starts = ((role == STARTS_WORD) | first) & in_word  # (B, L)
    words = ops.cumsum(ops.cast(starts, "int32"), axis=1) - 1  # (B, L)
    return ops.where(in_word, words, -1)


def piece_word_positions(pieces):
    """`word_positions` of rows of piece strings (no padding, start or end
    pieces), e.g. CTranslate2's: int32 (B, L), -1 past each row's end.

    Example:

    >>> piece_word_positions([["▁Da", "tei"], ["▁a"]]).tolist()
    [[0, 0], [0, -1]]
    """
    length = max(len(row) for row in pieces)
    ids = np.full((len(pieces), length), _STAND_IN[NO_WORD], np.int32)
    for index, row in enumerate(pieces):
        ids[index, : len(row)] = [
            _STAND_IN[STARTS_WORD if piece.startswith(WORD_START) else IN_WORD]
            for piece in row
        ]
    return np.asarray(word_positions(ids, _STAND_IN_ROLES))


# Stand-in ids for each role, and the roles by those ids.
_STAND_IN = {IN_WORD: 0, STARTS_WORD: 1, NO_WORD: 2}
_STAND_IN_ROLES = np.array([IN_WORD, STARTS_WORD, NO_WORD], np.int32)


def alignment_attention(cross_attention, layer, heads=0):
    """The attention that aligns: one layer's, averaged over its first heads.

    Args:
        cross_attention: (B, layers, heads, T, S), e.g. from
            `decoding.forced.teacher_forced_cross_attention`.
        layer: the decoder layer, an index (-1: the last).
        heads: how many of its first heads to average; 0 for all of them.

    Returns:
        (B, T, S).
    """
    maps = cross_attention[:, layer]  # (B, H, T, S)
    if heads:
        maps = maps[:, :heads]  # (B, heads, T, S)
    return ops.mean(maps, axis=1)  # (B, T, S)


def word_links(attention, source_words, target_words, every_source_word=True):
    """Hard word alignments: which source words each target word is linked to.

    Each target piece that belongs to a word is linked to the source piece
    it attends to most among those that belong to words; source word i
    and target word j are linked when a piece of j is linked to a piece
    of i. A target word can link to several source words and the other
    way round. A source word that no target piece attends to most is, with
    `every_source_word`, linked to the target word of the piece that
    attends most to it (the other direction of the same attention, as the
    last step of grow-diag-final adds links for unaligned words), so that
    markup on it has a place; without, it stays unlinked.

    Args:
        attention: float (B, T, S), from `alignment_attention`.
        source_words: int32 (B, S), from `word_positions`.
        target_words: int32 (B, T), from `word_positions`.
        every_source_word: link each source word, as above.

    Returns:
        bool (B, S, T): entry [b, i, j] links source word i to target word j
        (words are fewer than pieces, so the word axes are long enough).

    Example:

    >>> attention = np.array([[[0.1, 0.7, 0.2], [0.6, 0.3, 0.1]]])  # (1, 2, 3)
    >>> links = word_links(attention, np.array([[0, 1, 2]]), np.array([[0, 1]]))
    >>> np.argwhere(ops.convert_to_numpy(links)[0]).tolist()  # (source, target)
    [[0, 1], [1, 0], [2, 0]]
    >>> links = word_links(attention, np.array([[0, 1, 2]]), np.array([[0, 1]]),
    ...                    every_source_word=False)
    >>> np.argwhere(ops.convert_to_numpy(links)[0]).tolist()
    [[0, 1], [1, 0]]
    """
    source_words = ops.cast(source_words, "int32")  # (B, S)
    target_words = ops.cast(target_words, "int32")  # (B, T)
    attention = ops.cast(attention, "float32")  # (B, T, S)
    links = _linked_words(attention, source_words, target_words)  # (B, S, T)
    if not every_source_word:
        return links
    unlinked = ops.logical_not(ops.any(links, axis=2))  # (B, S) by source word
    across = ops.transpose(attention, (0, 2, 1))  # (B, S, T)
    pieces_unlinked = (source_words >= 0) & take_per_row(
        unlinked, ops.maximum(source_words, 0)
    )  # (B, S)
    added = _linked_words(
        across, target_words, ops.where(pieces_unlinked, source_words, -1)
    )  # (B, T, S): target word, source word
    return links | ops.transpose(added, (0, 2, 1))


def _linked_words(attention, source_words, target_words):
    """`word_links` of each target piece's most attended source piece:
    bool (B, S, T)."""
    source_length, target_length = ops.shape(attention)[2], ops.shape(attention)[1]
    # A last column in no word, so that the argmax has a column to choose
    # even with no source pieces (S is 0 in a batch of 0 rows).
    batch = ops.shape(attention)[0]
    source_words = ops.concatenate(
        [source_words, ops.full((batch, 1), -1, "int32")], axis=1
    )  # (B, S + 1)
    in_source_word = (source_words >= 0)[:, None, :]  # (B, 1, S + 1)
    scores = ops.pad(attention, [[0, 0], [0, 0], [0, 1]])  # (B, T, S + 1)
    best = ops.argmax(ops.where(in_source_word, scores, -1.0), axis=-1)  # (B, T)
    best_word = take_per_row(source_words, best)  # (B, T)
    linked = ops.cast((target_words >= 0) & (best_word >= 0), "float32")  # (B, T)
    source_hot = ops.one_hot(ops.maximum(best_word, 0), source_length)  # (B, T, S)
    target_hot = ops.one_hot(ops.maximum(target_words, 0), target_length)  # (B, T, T)
    counts = ops.einsum(
        "bts,btu->bsu", source_hot * linked[..., None], target_hot
    )  # (B, S, T)
    return counts > 0
