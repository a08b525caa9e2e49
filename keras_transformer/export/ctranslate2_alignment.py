"""Word alignments from CTranslate2's attention, by `Translator.align`'s rules."""

import numpy as np

from keras_transformer.alignment.links import piece_word_positions, word_links
from keras_transformer.alignment.pharaoh import format_pharaoh


def pharaoh_lines(results, source_pieces, target_pieces):
    """A Pharaoh line per pair, from the attention CTranslate2 returned.

    Args:
        results: CTranslate2's `TranslationResult`s of forced decoding
            (`target_prefix` the target's pieces, `return_attention=True`):
            each its first hypothesis's attention, a list per target piece
            of a float per source piece, from the layer and heads the
            export set.
        source_pieces, target_pieces: per pair, its pieces (str), none
            empty.

    Returns:
        A list of str, `alignment.word_links`' links of each pair.

    Example:

    >>> class Result:  # what CTranslate2 returns, for one pair
    ...     attention = [[[0.9, 0.1], [0.2, 0.8]]]  # a row per target piece
    >>> pharaoh_lines([Result()], [["▁ein", "▁Haus"]], [["▁a", "▁house"]])
    ['0-0 1-1']
    """
    links = word_links(
        _padded([result.attention[0] for result in results]),  # (B, T, S)
        piece_word_positions(source_pieces),
        piece_word_positions(target_pieces),
    )  # (B, S, T)
    return [format_pharaoh(np.argwhere(row)) for row in np.asarray(links)]


def _padded(rows):
    """Lists of lists of floats (T_b, S_b) -> float32 (B, T, S), 0-padded."""
    length = max(len(row) for row in rows)
    width = max(len(values) for row in rows for values in row)
    padded = np.zeros((len(rows), length, width), np.float32)
    for index, row in enumerate(rows):
        for position, values in enumerate(row):
            padded[index, position, : len(values)] = values
    return padded
