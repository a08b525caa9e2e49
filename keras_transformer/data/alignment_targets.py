"""Word alignments as training targets: Pharaoh lines to piece matrices.

Guided alignment training (Garg et al., 2019, "Jointly Learning to Align
and Translate with Transformer Models") trains the attention that aligns
(`Transformer(alignment_output=True)`) toward given word alignments. A
pair's alignment is a Pharaoh line, `i-j` for source word i and target
word j (from 0), the words being what stands between spaces, as
`keras_transformer.alignment` reads them. `alignment_targets` spreads the
links of words to their pieces: the matrix of `model_example`'s labels by
its encoder inputs, 1 where a target piece's word is linked to a source
piece's word.

TensorFlow ops, for the `tf.data` pipeline (`make_dataset` takes
`(source, target, alignment)` triples); `check_alignment_file` reads a
file of them against its corpus before training does.
"""

import re

import tensorflow as tf

from keras_transformer.alignment.links import NO_WORD, STARTS_WORD
from keras_transformer.data.parallel_text import (
    CorpusReader,
    check_file,
    count_lines,
    numbered_lines,
)

# One link of a Pharaoh line: sure, `i-j`, or possible, `ipj`.
_LINK = r"([0-9]+)[-p]([0-9]+)"


def pharaoh_links(line):
    """The links of a Pharaoh line, int32 (N, 2): source word, target word.

    Sure (`i-j`) and possible (`ipj`) links alike; anything else in the line
    is an error (the recipe checks a file before training reads it).

    Example:

    >>> pharaoh_links(tf.constant("0-0 2-1 1p2")).numpy().tolist()
    [[0, 0], [2, 1], [1, 2]]
    """
    links = tf.strings.split(tf.strings.strip(line))  # (N,)
    tf.debugging.Assert(
        tf.reduce_all(tf.strings.regex_full_match(links, _LINK)), [line]
    )
    numbers = tf.strings.split(tf.strings.regex_replace(links, "p", "-"), "-")
    return tf.reshape(
        tf.strings.to_number(numbers.flat_values, tf.int32), [-1, 2]
    )  # (N, 2)


def piece_words(ids, roles):
    """`alignment.word_positions` of one sequence, in TensorFlow ops.

    Args:
        ids: int32 (L,) pieces, as an encoder input or labels.
        roles: int32 (V,) from `alignment.piece_roles`.

    Returns:
        int32 (L,): each piece's word, from 0; -1 for no word.
    """
    role = tf.gather(roles, ids)  # (L,)
    in_word = role != NO_WORD
    first = tf.range(tf.size(ids)) == 0
    starts = tf.logical_and(tf.logical_or(role == STARTS_WORD, first), in_word)
    return tf.where(in_word, tf.cumsum(tf.cast(starts, tf.int32)) - 1, -1)


def alignment_targets(line, encoder_inputs, labels, source_roles, target_roles):
    """The piece alignment of one example: float32 (T, S), labels by sources.

    Entry [t, s] is 1 when the word of label t is linked to the word of
    encoder input s in `line`; the end, start and padding tokens are in
    no word. Links to words that truncation cut off are left out, as are
    the words themselves.

    Args:
        line: a scalar string, the pair's Pharaoh line ("" for none: all 0).
        encoder_inputs: int32 (S,), `model_example`'s.
        labels: int32 (T,), `model_example`'s.
        source_roles, target_roles: int32 (V,) from `alignment.piece_roles`.

    Example:

    >>> roles = tf.constant([-1, -1, -1, 0, 1, 1, 0])  # 4, 5 start words, 6 not
    >>> alignment_targets(tf.constant("0-1 1-0"), tf.constant([4, 6, 5, 2]),
    ...                   tf.constant([5, 4, 2]), roles, roles).numpy()
    array([[0., 0., 1., 0.],
           [1., 1., 0., 0.],
           [0., 0., 0., 0.]], dtype=float32)
    """
    source_words = piece_words(encoder_inputs, source_roles)  # (S,)
    target_words = piece_words(labels, target_roles)  # (T,)
    counts = tf.stack(
        [tf.reduce_max(source_words) + 1, tf.reduce_max(target_words) + 1]
    )  # (2,) words in the example; at least 1 each below, for the gathers
    links = pharaoh_links(line)  # (N, 2)
    links = tf.boolean_mask(links, tf.reduce_all(links < counts, axis=1))
    words = tf.scatter_nd(
        links, tf.ones(tf.shape(links)[:1]), tf.maximum(counts, 1)
    )  # (source words, target words), a link given twice counted twice
    pieces = tf.gather(
        tf.gather(words, tf.maximum(target_words, 0), axis=1),
        tf.maximum(source_words, 0),
    )  # (S, T)
    in_words = tf.logical_and(source_words[:, None] >= 0, target_words[None, :] >= 0)
    return tf.transpose(tf.where(in_words, tf.minimum(pieces, 1.0), 0.0))  # (T, S)


def check_alignment_file(path, files, columns=(0, 1)):
    """Checks that `path` aligns the corpus `files`, line by line, in one read.

    Each line must be a Pharaoh line (`alignment.format_pharaoh`'s, or
    empty) of the pair on the same line of the corpus, whose words it
    names: `i-j` with source word i and target word j, counted from 0
    among what is between spaces in the pair. The lines of the pairs the
    corpus leaves out go unread, and the file must have as many lines as
    the corpus.

    Args:
        path: the alignment file.
        files: the corpus, `(source, target)` or `(tsv,)`.
        columns: for a TSV file, the source and target columns.

    Returns:
        The number of links of the pairs read.

    Raises:
        FileNotFoundError: `path` is missing.
        ValueError: a line that is not Pharaoh, a word that the pair does
            not have, or a count of lines that is not the corpus's (named
            with the file and line).
    """
    check_file(path, "The alignment file")
    alignments = numbered_lines(path)
    links, read, line = 0, 0, ""
    for number, source, target in CorpusReader(files, columns):
        line = next((line for at, line in alignments if at == number), None)
        if line is None:
            break
        links += _check_links(line, source, target, f"{path!r} line {number + 1}")
        read = number + 1
    read += sum(1 for _ in alignments)
    corpus_lines = count_lines(files[0])
    if read != corpus_lines:
        raise ValueError(
            f"{path!r} has {read if line is not None else 'fewer'} lines but "
            f"{files[0]!r} has {corpus_lines}: a line of word alignments per line "
            "of the corpus."
        )
    return links


def _check_links(line, source, target, where):
    """The number of links of a Pharaoh `line` of a pair; a ValueError
    naming `where` if it is not one, or names words the pair lacks."""
    words = len(source.split()), len(target.split())
    links = line.split()
    for link in links:
        match = re.fullmatch(_LINK, link)
        if not match:
            raise ValueError(
                f"{where}: {link!r} is not a link i-j of source word i and target "
                "word j (Pharaoh format, from 0)."
            )
        sides = zip(("source", "target"), match.groups(), words, strict=True)
        for side, index, count in sides:
            if int(index) >= count:
                raise ValueError(
                    f"{where}: {link!r} names {side} word {index}, but the pair's "
                    f"{side} has {count} words (counted from 0)."
                )
    return len(links)
