"""Your own parallel text as `tf.data.Dataset`s of `(source, target)` pairs.

- `load_text_corpus(path, target_path)`: two files with one sentence per
  line, or one tab-separated file, split deterministically by source.
- `load_parallel_files(train_files, validation_files, test_files)`: the
  three splits from their own files, or held out from the training files.
- `pairs_to_dataset(pairs)` and `dataset_to_lists(pairs)`: a list of pairs
  you already have to a dataset, and back.

The training pairs stream from disk (`file_stream`) after one checking read
(`corpus_scan`); only held-out pairs and a bounded sample are held in memory.
Corpora by name (TensorFlow Datasets and the offline Ding pairs) are in
`keras_transformer.data.corpora`.
"""

import tensorflow as tf

from keras_transformer.data.alignment_targets import check_alignment_file
from keras_transformer.data.corpus_scan import (
    SAMPLE_PAIRS,
    scan_corpus,
)
from keras_transformer.data.file_stream import stream_pairs
from keras_transformer.data.parallel_text import corpus_files, read_pairs


def pairs_to_dataset(pairs):
    """A `tf.data.Dataset` of `(source, target)` strings from a list of pairs.

    Args:
        pairs: a sequence of `(source, target)` Python strings (may be empty).

    Returns:
        A dataset of pairs of scalar `tf.string` tensors, in the given order.

    Example:

    >>> dataset = pairs_to_dataset([("Hallo Welt.", "Hello world.")])
    >>> [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()]
    [('Hallo Welt.', 'Hello world.')]
    """
    sources = tf.constant([source for source, _ in pairs], dtype=tf.string)
    targets = tf.constant([target for _, target in pairs], dtype=tf.string)
    return tf.data.Dataset.from_tensor_slices((sources, targets))


def dataset_to_lists(pairs):
    """The inverse of `pairs_to_dataset`: two lists of `str`, sources and targets.

    Args:
        pairs: a `tf.data.Dataset` of `(source, target)` scalar strings.

    Returns:
        `(sources, targets)`, lists of `str` in the dataset's order.

    Example:

    >>> dataset_to_lists(pairs_to_dataset([("Hallo Welt.", "Hello world.")]))
    (['Hallo Welt.'], ['Hello world.'])
    """
    sources, targets = [], []
    for source, target in pairs.as_numpy_iterator():
        sources.append(source.decode("utf-8"))
        targets.append(target.decode("utf-8"))
    return sources, targets


def load_text_corpus(
    path,
    target_path=None,
    columns=(0, 1),
    validation_fraction=0.0,
    test_fraction=0.0,
):
    """Your own parallel text as datasets of `(source, target)` pairs per split.

    Either two aligned files with one sentence per line (`path` holds the
    sources, `target_path` the targets), or, without `target_path`, one
    tab-separated file with a pair per line. Each may be a glob pattern
    (see `parallel_text.corpus_files`). The files are read once to check
    them; the training pairs then stream from disk.

    Args:
        path: the source file, or the TSV file.
        target_path: the target file; None reads `path` as TSV.
        columns: for a TSV file, the source and target columns.
        validation_fraction: the share of sources held out for validation.
        test_fraction: the share of sources held out for test.

    Returns:
        A dict from `"train"` (and `"validation"`, `"test"` when their
        fraction is above 0) to a `tf.data.Dataset` of scalar `tf.string`
        pairs; see `corpus_scan.split_pairs` for how the split is made.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: line counts differ, a TSV line is malformed, or a file
            is not UTF-8.

    Example:

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     tsv = pathlib.Path(folder) / "pairs.tsv"
    ...     _ = tsv.write_text("Guten Morgen.\\tGood morning.\\nDanke.\\tThanks.\\n")
    ...     corpus = load_text_corpus(tsv)
    >>> int(corpus["train"].cardinality())
    2
    """
    files = (path,) if target_path is None else (path, target_path)
    shares = {"validation": validation_fraction, "test": test_fraction}
    fractions = {name: share for name, share in shares.items() if share > 0}
    scan = scan_corpus(corpus_files(files), fractions, columns, sample_size=0)
    splits = {name: pairs_to_dataset(pairs) for name, pairs in scan.held_out.items()}
    return {"train": stream_pairs(scan, columns), **splits}


def load_parallel_files(
    train_files,
    validation_files=(),
    test_files=(),
    sample_size=SAMPLE_PAIRS,
    seed=0,
    log=None,
    alignments=None,
):
    """Train, validation and test datasets of pairs from your files.

    Each argument is `(source file, target file)` or `(TSV file,)` (see
    `read_pairs`); the training files may be glob patterns, for several
    corpora (`parallel_text.corpus_files`). A split given no files is held
    out from the training pairs: `corpus_scan.held_out_fraction` of the sources, by
    `corpus_scan.split_pairs`. The training files are read once, as a
    stream, to check and count them (`corpus_scan.scan_corpus`); the
    training pairs then stream from disk (`file_stream.stream_pairs`).

    Args:
        train_files: the files of the training split.
        validation_files: the files of the validation split.
        test_files: the files of the test split.
        sample_size: training pairs kept as the scan's sample.
        seed: the seed of the sample and of the interleaving of corpora.
        log: called with a progress line as large files are read.
        alignments: a file of word alignments of the training pairs, a
            Pharaoh line per line of the (one) training corpus, checked
            first (`alignment_targets.check_alignment_file`).

    Returns:
        `(splits, scan)`: a dict from `"train"`, `"validation"` and `"test"`
        to datasets of `(source, target)` strings (the training pairs of
        known cardinality; with `alignments`, `(source, target,
        alignment)`), and the `corpus_scan.CorpusScan` of the training
        files (its `fractions`: the share of each split held out).

    Raises:
        FileNotFoundError, ValueError: see `read_pairs`; a ValueError also
            for a split without pairs.
    """
    corpora = corpus_files(train_files)
    given = {"validation": tuple(validation_files), "test": tuple(test_files)}
    held = {name: None for name, files in given.items() if not files}
    if alignments:
        if len(corpora) != 1:
            raise ValueError(
                f"An alignment file goes with one corpus; {len(corpora)} match "
                f"the training files {' '.join(train_files)}."
            )
        check_alignment_file(alignments, corpora[0])
    scan = scan_corpus(corpora, held, sample_size=sample_size, seed=seed, log=log)
    splits = {
        "train": stream_pairs(scan, seed=seed, alignments=alignments),
        **_held_out(scan),
    }
    for name, files in given.items():
        if files:
            splits[name] = pairs_to_dataset(read_pairs(*files))
    for name, part in splits.items():
        if part.cardinality() > 0:
            continue
        if name in held:
            raise ValueError(
                f"The {name} split held out from {scan.pairs_read} training pairs is "
                f"empty: give {name} files, or more pairs."
            )
        raise ValueError(f"The {name} files hold no sentence pairs.")
    return splits, scan


def _held_out(scan):
    return {name: pairs_to_dataset(pairs) for name, pairs in scan.held_out.items()}
