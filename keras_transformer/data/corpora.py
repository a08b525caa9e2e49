"""Translation corpora by name as `tf.data.Dataset`s of `(source, target)` pairs.

`load_translation_corpus(name, source, target)` loads any TensorFlow Datasets
translation dataset (`"wmt14_translate/de-en"`,
`"ted_hrlr_translate/pt_to_en"`, ...) and the offline Ding pairs (`"ding"`,
built from the installed `trans-de-en` package): a dict from split name to a
dataset whose elements are two scalar `tf.string` tensors.
`resolve_language_pair` says which dataset and languages a name means without
loading anything.

Your own files are loaded by `keras_transformer.data.parallel_files`, with the
same result.
"""

import contextlib
import os
import re

import filelock
import tensorflow as tf
import tensorflow_datasets as tfds

from keras_transformer.corpus_aliases import DING_ALIASES
from keras_transformer.data import tfds_ding, tfds_internals

DEFAULT_SPLITS = ("train", "validation", "test")
_PAIR_IN_NAME = re.compile(r"^([a-z]{2,3})(?:-|_to_)?([a-z]{2,3})$")


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


def _make_builder(name, source, target, data_dir):
    """The TFDS builder for `name` (no download), with clear errors."""
    if name.lower() in DING_ALIASES:
        name = tfds_ding.DingDeEn.name
    try:
        if "/" not in name:
            name = _choose_config(name, source, target)
        return tfds_internals.builder_leaving_no_temp_folder(name, data_dir)
    except tfds.core.DatasetNotFoundError as error:
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


def _prepare(builder, download, remake):
    """`builder` with its data in its data_dir, or say how to get it.

    Returns `builder`, or `remake()` (a new builder) where another process
    prepared the data while this one waited for it.
    """
    if builder.is_prepared():
        return builder
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
    with _one_preparer(builder):
        if builder.is_prepared():  # by the process this one waited for
            return remake()  # a builder that reads what is now on disk
        try:
            builder.download_and_prepare()
        except Exception as error:  # network, manual-download, missing-file errors
            raise CorpusNotFoundError(
                f"Could not prepare {builder.info.full_name} in {builder.data_dir}: "
                f"{type(error).__name__}: {error} {hint}".rstrip()
            ) from error
    return builder


@contextlib.contextmanager
def _one_preparer(builder):
    """Holds a lock file beside `builder`'s version folder, so that of the
    processes that start on an unprepared corpus at once (two runs, the
    workers of a host), one prepares it and the others wait, then read it:
    TFDS alone lets each prepare it, and the later ones fail to rename
    theirs into place. Data in a bucket (`gs://`) is not locked."""
    version_folder = os.fspath(builder.data_dir)
    if "://" in version_folder:
        yield
        return
    parent, version = os.path.split(version_folder)
    os.makedirs(parent, exist_ok=True)
    with filelock.FileLock(os.path.join(parent, f".{version}.lock")):
        yield


def load_translation_corpus(
    name,
    source=None,
    target=None,
    splits=DEFAULT_SPLITS,
    data_dir=None,
    download=True,
    shuffle_seed=None,
):
    """Source-target pairs of a TFDS translation dataset, or of Ding, per split.

    The dataset is prepared in `data_dir` on first use, which downloads it
    from the internet (`download=True`), except `"ding"`, which is built
    offline in seconds from the installed `trans-de-en` package. Processes
    that start on it at once prepare it once: the others wait for it.

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
        shuffle_seed: None reads each split in its stored order; a seed
            reads its files (shards) in an order drawn anew on every pass,
            several at once, for training (a dataset stored in a fixed
            order, such as Ding, keeps it).

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
    builder = _prepare(
        builder, download, lambda: _make_builder(name, source, target, data_dir)
    )
    corpus = {}
    shuffled = shuffle_seed is not None and not builder.info.disable_shuffling
    read_config = tfds.ReadConfig(shuffle_seed=shuffle_seed) if shuffled else None
    for split in splits:
        examples = builder.as_dataset(
            split=split, shuffle_files=shuffled, read_config=read_config
        )
        corpus[split] = examples.map(
            lambda example: (example[source], example[target]),
            num_parallel_calls=tf.data.AUTOTUNE,
            deterministic=True,
        )
    return corpus
