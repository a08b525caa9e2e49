"""Parallel corpora as `tf.data.Dataset`s of `(source, target)` string pairs.

Three sources, one result: a dict from split name to a dataset whose elements
are two scalar `tf.string` tensors.

- `load_translation_corpus(name, source, target)`: any TensorFlow Datasets
  translation dataset (`"wmt14_translate/de-en"`,
  `"ted_hrlr_translate/pt_to_en"`, ...) and the offline Ding pairs
  (`"ding"`, built from the installed `trans-de-en` package).
- `load_text_corpus(path, target_path)`: your own files, either two files with
  one sentence per line or one tab-separated file.
- `pairs_to_dataset(pairs)`: a list of pairs you already have.
"""

import contextlib
import os
import re
import tempfile

import tensorflow as tf
import tensorflow_datasets as tfds

from keras_transformer.data import ding, tfds_ding
from keras_transformer.data.text_files import read_lines

DING_ALIASES = ("ding", "ding_de_en", "ding/de-en")
DEFAULT_SPLITS = ("train", "validation", "test")
_PAIR_IN_NAME = re.compile(r"^([a-z]{2,3})(?:-|_to_)?([a-z]{2,3})$")


SPLIT_SALT = "split_pairs:"
# What each held-out split of your own files gets: 5% of the sources, at most
# about 2,000 pairs' worth.
HELD_OUT_FRACTION = 0.05
HELD_OUT_MAX = 2000


class CorpusNotFoundError(FileNotFoundError):
    """A corpus is neither prepared in `data_dir` nor could be prepared."""


def _config_languages(config):
    """The language pair a TFDS builder config is about, or None."""
    pair = getattr(config, "language_pair", None)
    if pair:
        return tuple(pair)
    match = _PAIR_IN_NAME.match(config.name)
    return match.groups() if match else None


def _choose_config(name, source, target):
    """`name/config` for a builder given without a config, by language pair."""
    configs = getattr(tfds.builder_cls(name), "BUILDER_CONFIGS", None) or []
    if not configs:
        return name
    if source is None or target is None:
        raise ValueError(
            f"{name!r} has several configs; pass one, e.g. "
            f"'{name}/{configs[0].name}', or pass both `source` and `target`. "
            f"Configs: {', '.join(config.name for config in configs)}."
        )
    for config in configs:
        pair = _config_languages(config)
        if pair and set(pair) == {source, target}:
            return f"{name}/{config.name}"
    raise ValueError(
        f"{name!r} has no config for the language pair {source!r}-{target!r}. "
        f"Configs: {', '.join(config.name for config in configs)}."
    )


@contextlib.contextmanager
def _temporary_tempdir():
    """Points `tempfile` at a new folder inside a `with` block, then removes it.

    A TFDS builder of a dataset not prepared in its `data_dir` makes a
    `tmp...tfds` folder in the temp dir (for its metadata from GCS) and
    never removes it; made inside the block, it goes with the folder.
    """
    with tempfile.TemporaryDirectory() as folder:
        previous, tempfile.tempdir = tempfile.tempdir, folder
        try:
            yield
        finally:
            tempfile.tempdir = previous


def _make_builder(name, source, target, data_dir):
    """The TFDS builder for `name` (no download), with clear errors."""
    if name.lower() in DING_ALIASES:
        name = tfds_ding.DingDeEn.name
    try:
        if "/" not in name:
            name = _choose_config(name, source, target)
        with _temporary_tempdir():
            return tfds.builder(name, data_dir=data_dir)
    except tfds.core.registered.DatasetNotFoundError as error:
        raise ValueError(
            f"Unknown dataset {name!r}. Pass 'ding' (offline German-English, "
            "needs `apt-get install trans-de-en`) or the name of a TFDS "
            "translation dataset such as 'wmt14_translate/de-en' or "
            "'ted_hrlr_translate/pt_to_en' (see tfds.list_builders()); "
            "a dataset from a newer TFDS needs `pip install -U "
            "tensorflow-datasets`."
        ) from error


def _languages(builder):
    """The two language codes (or text feature names) of a builder's examples."""
    features = builder.info.features
    if isinstance(features, tfds.features.TranslationVariableLanguages):
        raise ValueError(
            f"{builder.name!r} has a variable set of languages per example; "
            "pick a dataset (or config) with a fixed language pair."
        )
    if isinstance(features, tfds.features.Translation):
        return tuple(features.languages)
    texts = tuple(
        key
        for key in getattr(features, "keys", list)()
        if isinstance(features[key], tfds.features.Text)
    )
    if len(texts) < 2:
        raise ValueError(
            f"{builder.name!r} is not a translation dataset: its examples have "
            f"no two text features ({features.__class__.__name__})."
        )
    return texts


def _full_name(builder):
    """`name/config` (or `name`) of a builder, without the version."""
    config = builder.builder_config
    return f"{builder.name}/{config.name}" if config else builder.name


def _resolve(name, source, target, data_dir):
    """The builder and the checked `(source, target)` pair, see below."""
    builder = _make_builder(name, source, target, data_dir)
    languages = _languages(builder)
    keys = builder.info.supervised_keys
    if keys and len(keys) == 2 and all(isinstance(key, str) for key in keys):
        default = tuple(keys)
    else:
        default = languages[:2]
    if source is None and target is None:
        source, target = default
    elif source is None:
        source = next(code for code in default + languages if code != target)
    elif target is None:
        target = next(code for code in default + languages if code != source)
    for role, code in (("source", source), ("target", target)):
        if code not in languages:
            raise ValueError(
                f"{_full_name(builder)} has no language {code!r} for the "
                f"{role}; it has {', '.join(languages)}."
            )
    if source == target:
        raise ValueError(f"source and target are both {source!r}.")
    return builder, source, target


def resolve_language_pair(name, source=None, target=None, data_dir=None):
    """The full TFDS name and the `(source, target)` languages of a corpus.

    Nothing is downloaded: only the builder's metadata is read.

    Args:
        name: `"ding"` or a TFDS dataset name, with or without its config
            (`"wmt14_translate/de-en"`, `"wmt14_translate"` with both
            languages given, `"ted_hrlr_translate/pt_to_en"`).
        source: the source language code; by default the dataset's
            supervised source (for WMT and TED, the first language of the
            config name), or the language that is not `target`.
        target: the target language code; by default the other language.
        data_dir: where TFDS keeps its data (its default when None).

    Returns:
        `(full_name, source, target)`, e.g.
        `("wmt14_translate/de-en", "en", "de")` for English to German.

    Raises:
        ValueError: unknown dataset or config, or a language it does not have.

    Example:

    >>> resolve_language_pair("ted_hrlr_translate/pt_to_en")
    ('ted_hrlr_translate/pt_to_en', 'pt', 'en')
    >>> resolve_language_pair("wmt14_translate", source="en", target="de")
    ('wmt14_translate/de-en', 'en', 'de')
    >>> resolve_language_pair("ding", target="de")
    ('ding_de_en', 'en', 'de')
    """
    builder, source, target = _resolve(name, source, target, data_dir)
    return _full_name(builder), source, target


def _prepare(builder, download):
    """Make sure `builder`'s data is in its data_dir, or say how to get it."""
    if builder.is_prepared():
        return
    is_ding = builder.name == tfds_ding.DingDeEn.name
    hint = (
        ""  # the error of a missing dictionary says what to install
        if is_ding
        else f"Connect to the internet and pass download=True, or run `tfds "
        f"build {_full_name(builder)} --data_dir DIR` where there is internet, copy "
        "DIR here and pass data_dir=DIR (some datasets also need manual "
        "downloads: see the TFDS catalog)."
    )
    if not download and not is_ding:
        raise CorpusNotFoundError(
            f"{builder.info.full_name} is not prepared in {builder.data_dir}. " + hint
        )
    try:
        builder.download_and_prepare()
    except Exception as error:  # network, manual-download and missing-file errors
        raise CorpusNotFoundError(
            f"Could not prepare {builder.info.full_name} in {builder.data_dir}: "
            f"{type(error).__name__}: {error} {hint}".rstrip()
        ) from error


def load_translation_corpus(
    name,
    source=None,
    target=None,
    splits=DEFAULT_SPLITS,
    data_dir=None,
    download=True,
):
    """Source-target pairs of a TFDS translation dataset, or of Ding, per split.

    The dataset is prepared in `data_dir` on first use, which downloads it
    from the internet (`download=True`), except `"ding"`, which is built
    offline in seconds from the installed `trans-de-en` package.

    Args:
        name: `"ding"` (German-English, offline), or a TFDS translation
            dataset such as `"wmt14_translate/de-en"` or
            `"ted_hrlr_translate/pt_to_en"`, see `resolve_language_pair`.
        source: the source language code (default: the dataset's own).
        target: the target language code (default: the other one).
        splits: the TFDS split strings to load; each can use TFDS's split
            syntax, e.g. `"train+phrases"` for Ding with its phrases or
            `"train[:10%]"`.
        data_dir: where TFDS keeps its data (its default when None).
        download: whether a dataset that is not in `data_dir` may be
            downloaded; with False it must already be prepared there.

    Returns:
        A dict from each split string to a `tf.data.Dataset` of
        `(source, target)` scalar `tf.string` pairs.

    Raises:
        ValueError: unknown dataset, config or language.
        CorpusNotFoundError: the data is not in `data_dir` and could not be
            prepared; the message says what to install or pass.

    Example:

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as data_dir:
    ...     corpus = load_translation_corpus(
    ...         "ding", "en", "de", splits=("test",), data_dir=data_dir
    ...     )
    ...     english, german = next(iter(corpus["test"]))
    >>> german.dtype.name
    'string'
    """
    builder, source, target = _resolve(name, source, target, data_dir)
    _prepare(builder, download)
    corpus = {}
    for split in splits:
        examples = builder.as_dataset(split=split)
        corpus[split] = examples.map(
            lambda example: (example[source], example[target]),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    return corpus


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
