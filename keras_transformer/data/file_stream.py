"""The training pairs of your files, streamed from disk by `tf.data`.

`stream_pairs(scan)` reads the corpora that `corpus_scan.scan_corpus`
checked, with `tf.data.TextLineDataset`, by the rules of
`keras_transformer.data.parallel_text` (tested to give the same pairs),
less the lines the scan held out. Several corpora are interleaved at random,
each in proportion to its pairs. Nothing is held in memory but the batch of
lines being read.
"""

import tensorflow as tf

# Python's whitespace (`str.split`) in RE2: \t to \r, the information
# separators \x1c to \x1f, NEL, and Unicode's separators (Zs, Zl, Zp).
WHITESPACE = r"[\t-\r\x{1c}-\x{1f}\x{85}\p{Z}]+"
# Lines read and normalised together.
LINES_A_BATCH = 1024


def normalise_texts(texts):
    """`parallel_text.normalise` of a string tensor, element by element.

    Example:

    >>> normalise_texts(tf.constant(["  Guten\\u00a0 Morgen.\\t"])).numpy()
    array([b'Guten Morgen.'], dtype=object)
    """
    return tf.strings.strip(tf.strings.regex_replace(texts, WHITESPACE, " "))


def _without_mark(lines):
    return tf.strings.regex_replace(lines, "^\ufeff", "")


def _tsv_columns(lines, columns):
    """The (source, target) columns of (B,) TSV lines; "" where a line lacks them."""
    fields = tf.strings.split(_without_mark(lines), "\t")  # (B, None)
    fields = fields.to_tensor("", shape=[None, max(columns) + 1])  # (B, C)
    return fields[:, columns[0]], fields[:, columns[1]]


def _corpus_pairs(files, columns, held_out_lines, alignments=None):
    """The pairs of one corpus, `(tsv,)` or `(source, target)`, less held-out
    lines; triples with the lines of `alignments`, a file beside them."""
    lines = tuple(map(tf.data.TextLineDataset, files))
    if alignments:
        lines += (tf.data.TextLineDataset(alignments),)
    lines = tf.data.Dataset.zip(lines)
    held = tf.constant(sorted(held_out_lines), tf.int64)  # (H,)

    def pairs_of(numbers, lines):  # (B,) and a tuple of (B,) per file
        if alignments:
            *lines, alignment = lines
        if len(files) == 1:
            sources, targets = _tsv_columns(lines[0], columns)
        else:
            sources, targets = map(_without_mark, lines)
        sources, targets = normalise_texts(sources), normalise_texts(targets)
        keep = tf.logical_and(
            tf.strings.length(sources) > 0, tf.strings.length(targets) > 0
        )
        if held_out_lines:
            place = tf.searchsorted(held, numbers)  # (B,) in [0, H]
            found = tf.gather(held, tf.minimum(place, len(held_out_lines) - 1))
            keep = tf.logical_and(keep, found != numbers)
        kept = (sources, targets) + ((alignment,) if alignments else ())
        return tuple(tf.boolean_mask(texts, keep) for texts in kept)

    batches = lines.enumerate().batch(LINES_A_BATCH)
    pairs = batches.map(pairs_of, num_parallel_calls=tf.data.AUTOTUNE)
    return pairs.unbatch()


def stream_pairs(scan, columns=(0, 1), seed=None, alignments=None):
    """The training pairs of `scan`'s corpora as a `tf.data.Dataset`.

    Args:
        scan: a `corpus_scan.CorpusScan` of the files.
        columns: for TSV files, the source and target columns.
        seed: the seed of the interleaving of several corpora (a new draw
            on every pass).
        alignments: a file of the pairs' word alignments, a Pharaoh line
            per line of the one corpus (see `alignment_targets`), checked
            by `alignment_targets.check_alignment_file`.

    Returns:
        A dataset of `(source, target)` scalar strings of known cardinality
        (the scan's training pairs): each corpus in file order, several
        interleaved at random in proportion to their pairs. With
        `alignments`, `(source, target, alignment)`.
    """
    datasets = [
        _corpus_pairs(files, columns, lines, alignments)
        for files, lines in zip(scan.corpora, scan.held_out_lines, strict=True)
    ]
    if len(datasets) == 1:
        pairs = datasets[0]
    else:
        total = max(scan.training_pairs, 1)
        pairs = tf.data.Dataset.sample_from_datasets(
            datasets,
            weights=[count / total for count in scan.pairs],
            seed=seed,
            stop_on_empty_dataset=False,
            rerandomize_each_iteration=True,
        )
    return pairs.apply(tf.data.experimental.assert_cardinality(scan.training_pairs))
