"""Your own parallel text as `tf.data.Dataset`s of `(source, target)` pairs.

- `load_text_corpus(path, target_path)`: two files with one sentence per
  line, or one tab-separated file, split deterministically by source.
- `load_parallel_files(train_files, validation_files, test_files)`: the
  three splits from their own files, or held out from the training files.
- `pairs_to_dataset(pairs)` and `dataset_to_lists(pairs)`: a list of pairs
  you already have to a dataset, and back.

Corpora by name (TensorFlow Datasets and the offline Ding pairs) are in
`keras_transformer.data.corpora`.
"""

import os

import tensorflow as tf

from keras_transformer.data import ding
from keras_transformer.data.text_files import read_lines

SPLIT_SALT = "split_pairs:"
# What each held-out split of your own files gets: 5% of the sources, at most
# about 2,000 pairs' worth.
HELD_OUT_FRACTION = 0.05
HELD_OUT_MAX = 2000


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


def _check_file(path, what):
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"The {what} {os.fspath(path)!r} does not exist; pass the path of a "
            "UTF-8 text file."
        )


def _normalise(text):
    return " ".join(text.split())


def read_parallel_files(source_path, target_path):
    """The sentence pairs of two aligned files, one sentence per line.

    Line i of one file translates line i of the other. Spacing is
    normalised; a pair with an empty line on either side is dropped.

    Args:
        source_path: the file of source sentences (UTF-8).
        target_path: the file of target sentences (UTF-8).

    Returns:
        A list of `(source, target)` strings, in file order.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: the files have different numbers of lines (both named).
    """
    _check_file(source_path, "source file")
    _check_file(target_path, "target file")
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        raise ValueError(
            f"{os.fspath(source_path)!r} has {len(sources)} lines but "
            f"{os.fspath(target_path)!r} has {len(targets)}; parallel files "
            "need one line per sentence on both sides."
        )
    pairs = zip(map(_normalise, sources), map(_normalise, targets), strict=True)
    return [(source, target) for source, target in pairs if source and target]


def read_tsv(path, columns=(0, 1)):
    """The sentence pairs of a tab-separated file, one pair per line.

    Blank lines are skipped. Extra columns are allowed (for example the
    attribution column of Tatoeba exports); `columns` picks the two to use.

    Args:
        path: the file (UTF-8), `source<TAB>target` per line by default.
        columns: the 0-based columns of the source and the target.

    Returns:
        A list of `(source, target)` strings with normalised spacing.

    Raises:
        FileNotFoundError: the file is missing.
        ValueError: a line has too few columns or an empty source or target;
            the message gives its 1-based line number.
    """
    _check_file(path, "TSV file")
    source_column, target_column = columns
    pairs = []
    for number, line in enumerate(read_lines(path), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) <= max(source_column, target_column):
            raise ValueError(
                f"{os.fspath(path)!r} line {number}: expected at least "
                f"{max(source_column, target_column) + 1} tab-separated "
                f"columns, got {len(fields)}: {line[:80]!r}"
            )
        pair = (_normalise(fields[source_column]), _normalise(fields[target_column]))
        if not all(pair):
            raise ValueError(
                f"{os.fspath(path)!r} line {number}: empty source or target: "
                f"{line[:80]!r}"
            )
        pairs.append(pair)
    return pairs


def read_pairs(path, target_path=None, columns=(0, 1)):
    """The sentence pairs of two aligned files, or of one TSV file.

    Args:
        path: the source file (one sentence per line), or the TSV file.
        target_path: the target file; None reads `path` as TSV.
        columns: for a TSV file, the source and target columns.

    Returns:
        A list of `(source, target)` strings: see `read_parallel_files` and
        `read_tsv`.
    """
    if target_path is None:
        return read_tsv(path, columns)
    return read_parallel_files(path, target_path)


def split_pairs(pairs, validation_fraction=0.0, test_fraction=0.0):
    """Split pairs deterministically by a stable hash of their source.

    All pairs with the same source (ignoring case, spacing and final
    punctuation) land in the same split, so no validation or test source is
    ever in train. See `keras_transformer.data.ding.assign_split`; the hash
    is salted differently from the Ding corpus's own split, so re-splitting
    Ding's training sentences still gives validation and test sets.

    Args:
        pairs: `(source, target)` strings.
        validation_fraction: the expected share of sources in validation.
        test_fraction: the expected share of sources in test.

    Returns:
        A dict with `"train"` and, when their fraction is above 0,
        `"validation"` and `"test"`, each a list of pairs in input order.

    Example:

    >>> pairs = [(f"Satz {i}.", f"Sentence {i}.") for i in range(1000)]
    >>> {name: len(part) for name, part in split_pairs(pairs, 0.1, 0.1).items()}
    {'train': 812, 'validation': 94, 'test': 94}
    """
    splits = {"train": []}
    if validation_fraction > 0:
        splits["validation"] = []
    if test_fraction > 0:
        splits["test"] = []
    for pair in pairs:
        split = ding.assign_split(
            pair[0], validation_fraction, test_fraction, salt=SPLIT_SALT
        )
        splits[split].append(pair)
    return splits


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
    tab-separated file with a pair per line.

    Args:
        path: the source file, or the TSV file.
        target_path: the target file; None reads `path` as TSV.
        columns: for a TSV file, the source and target columns.
        validation_fraction: the share of sources held out for validation.
        test_fraction: the share of sources held out for test.

    Returns:
        A dict from `"train"` (and `"validation"`, `"test"` when their
        fraction is above 0) to a `tf.data.Dataset` of scalar `tf.string`
        pairs; see `split_pairs` for how the split is made.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: line counts differ, or a TSV line is malformed.

    Example:

    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     tsv = pathlib.Path(folder) / "pairs.tsv"
    ...     _ = tsv.write_text("Guten Morgen.\\tGood morning.\\nDanke.\\tThanks.\\n")
    ...     corpus = load_text_corpus(tsv)
    >>> int(corpus["train"].cardinality())
    2
    """
    pairs = read_pairs(path, target_path, columns=columns)
    splits = split_pairs(pairs, validation_fraction, test_fraction)
    return {name: pairs_to_dataset(part) for name, part in splits.items()}


def held_out_fraction(pairs):
    """The share of sources a held-out split of `pairs` pairs gets.

    5%, or about 2,000 pairs' worth for a corpus of over 40,000 pairs.

    Example:

    >>> held_out_fraction(16_913), held_out_fraction(100_000)
    (0.05, 0.02)
    """
    return min(HELD_OUT_FRACTION, HELD_OUT_MAX / max(pairs, 1))


def load_parallel_files(train_files, validation_files=(), test_files=()):
    """Train, validation and test datasets of pairs from your files.

    Each argument is `(source file, target file)` or `(TSV file,)` (see
    `read_pairs`). A split given no files is held out from the training
    pairs: `held_out_fraction` of the sources, by `split_pairs`.

    Returns:
        `(splits, held_out)`: a dict from `"train"`, `"validation"` and
        `"test"` to datasets of `(source, target)` strings, and a dict from
        the name of each split held out from the training files to the
        share of the sources it got.

    Raises:
        FileNotFoundError, ValueError: see `read_pairs`; a ValueError also
            for a split without pairs.
    """
    pairs = read_pairs(*train_files)
    fraction = held_out_fraction(len(pairs))
    given = {"validation": tuple(validation_files), "test": tuple(test_files)}
    splits = split_pairs(
        pairs, *(0.0 if given[name] else fraction for name in ("validation", "test"))
    )
    held_out = {name: fraction for name, files in given.items() if not files}
    for name, files in given.items():
        if files:
            splits[name] = read_pairs(*files)
    for name, part in splits.items():
        if part:
            continue
        if name in held_out:
            raise ValueError(
                f"The {name} split held out from {len(pairs)} training pairs is "
                f"empty: give {name} files, or more pairs."
            )
        raise ValueError(f"The {name} files hold no sentence pairs.")
    return {name: pairs_to_dataset(part) for name, part in splits.items()}, held_out
