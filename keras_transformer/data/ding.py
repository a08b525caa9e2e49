"""German-English sentence pairs from the Ding dictionary (Debian `trans-de-en`).

The Ding dictionary (Frank Richter, TU Chemnitz, GPL 2 or later) is read at run
time from the file that `apt-get install trans-de-en` puts at `DING_PATH`; none
of it is copied into this repository. `keras_transformer.data.ding_parser`
reads its lines into sentence pairs, phrases and variant pairs (the sentence
rule is in its docstring); this module splits them, and reads and caches the
file.

Sentence pairs are split into train, validation and test. Phrases are extra
training data only. Variant pairs (the other pairings of the `; ` variants of
a sentence sub-entry) are extra training data too, kept only for sub-entries
whose sentence pair is in train and never sharing a `source_key` with a
validation or test sentence.

Splits are assigned by a stable hash of the normalised German source (see
`source_key`), so one German sentence, with all its English translations,
lands in exactly one split (about 90/5/5), and no validation or test source
ever appears in train or in the phrases. The file is read as UTF-8 and
normalised to NFC. From Ding 2023-01-30 (Debian package `trans-de-en` 1.9-6) this
gives 16,913 train, 937 validation and 916 test sentence pairs (18,638
distinct German sentences), 80,401 phrases and 2,020 variant pairs.
"""

import functools
import hashlib
import os
import unicodedata

from keras_transformer.data.ding_parser import classify_line
from keras_transformer.data.text_files import read_lines

DING_PATH = "/usr/share/trans/de-en"
SPLITS = ("train", "validation", "test", "phrases", "variants")


def source_key(source):
    """The normalised form of a source sentence that decides its split.

    Case, spacing and final punctuation are ignored, so `Er kommt.` and
    `er kommt!` share a key and therefore a split.

    Args:
        source: a source sentence.

    Returns:
        The key as a string.

    Example:

    >>> source_key("  Er  kommt! ")
    'er kommt'
    """
    text = " ".join(unicodedata.normalize("NFC", source).casefold().split())
    return text.rstrip(".!?;:, ")


def assign_split(source, validation_fraction=0.05, test_fraction=0.05, salt=""):
    """The split of a source sentence, from a stable hash of its `source_key`.

    The hash is SHA-256, so the answer is the same on every machine and in
    every Python process.

    Args:
        source: a source sentence.
        validation_fraction: the expected share of sources in validation.
        test_fraction: the expected share of sources in test.
        salt: a prefix of the hashed text; another salt gives another,
            independent split.

    Returns:
        `"train"`, `"validation"` or `"test"`.

    Example:

    >>> assign_split("Er hat einfach blau gemacht.")
    'train'
    >>> assign_split("Er hat einfach blau gemacht.", 0.0, test_fraction=1.0)
    'test'
    """
    if validation_fraction < 0 or test_fraction < 0:
        raise ValueError(
            "validation_fraction and test_fraction must be >= 0, got "
            f"{validation_fraction} and {test_fraction}."
        )
    if validation_fraction + test_fraction > 1:
        raise ValueError(
            "validation_fraction + test_fraction must be <= 1, got "
            f"{validation_fraction} + {test_fraction}."
        )
    return split_at(split_position(source, salt), validation_fraction, test_fraction)


def split_position(source, salt=""):
    """Where a source falls in [0, 1): a SHA-256 hash of its `source_key`.

    Example:

    >>> 0.0 <= split_position("Er kommt.") == split_position("er kommt!") < 1.0
    True
    """
    digest = hashlib.sha256((salt + source_key(source)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64  # uniform in [0, 1)


def split_at(position, validation_fraction, test_fraction):
    """The split of a `split_position`: test below `test_fraction`, then
    validation for `validation_fraction` more, then train."""
    if position < test_fraction:
        return "test"
    if position < test_fraction + validation_fraction:
        return "validation"
    return "train"


def _check_ding_file(path):
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"The Ding German-English dictionary is not at {os.fspath(path)!r}. "
            "Install it with `apt-get install trans-de-en` (Debian/Ubuntu), or "
            "pass the path of a copy of its `de-en` file (the TFDS builder "
            "reads `keras_transformer.data.ding.DING_PATH`)."
        )


def read_ding_lines(path=DING_PATH):
    """The lines of the Ding file, with a clear error when it is missing.

    Args:
        path: the dictionary file.

    Returns:
        A list of the file's lines (split as `read_lines` splits them),
        comments included, normalised to NFC.

    Raises:
        FileNotFoundError: the file does not exist; the message says to run
            `apt-get install trans-de-en` or pass `path`.
        ValueError: the file is not UTF-8.
    """
    _check_ding_file(path)
    return [unicodedata.normalize("NFC", line) for line in read_lines(path)]


def split_ding_lines(lines, validation_fraction=0.05, test_fraction=0.05):
    """Parse Ding lines into de-duplicated, split sentence pairs and extras.

    Sentence pairs are de-duplicated as `(german, english)` pairs; a German
    sentence with several English translations keeps all of them, in the
    same split (the split depends only on the German side, see
    `assign_split`). Phrases are de-duplicated too and never share a
    `source_key` with any sentence, so none repeats a validation or test
    source. Variant pairs are kept only when their sentence pair is in
    train, and never share a `source_key` with a validation or test
    sentence.

    Args:
        lines: lines of the Ding file (comments are skipped).
        validation_fraction: the share of German sentences in validation.
        test_fraction: the share of German sentences in test.

    Returns:
        A dict from `"train"`, `"validation"`, `"test"`, `"phrases"` and
        `"variants"` to lists of `(german, english)` string pairs, in the
        order of `lines`.

    Example:

    >>> splits = split_ding_lines([
    ...     "kommen {vi} | Ich komme gleich. :: to come | I'm coming soon.",
    ...     "Ich komme gleich! | ich komme gleich | gleich kommen :: "
    ...     "I'll be right there!; I am coming now! | I come soon | to come soon",
    ... ])
    >>> splits["train"]
    [('Ich komme gleich.', "I'm coming soon."), ('Ich komme gleich!', \
"I'll be right there!")]
    >>> splits["phrases"], splits["variants"]
    ([('gleich kommen', 'to come soon')], [('Ich komme gleich!', 'I am coming now!')])
    """
    sentences, phrases, variant_pairs = [], [], []
    for line in lines:
        line_sentences, line_phrases, line_variant_pairs = classify_line(line)
        sentences.extend(line_sentences)
        phrases.extend(line_phrases)
        variant_pairs.extend(line_variant_pairs)
    splits = {split: [] for split in SPLITS}
    seen = set()  # every pair kept so far, in any split
    _split_sentences(sentences, splits, seen, validation_fraction, test_fraction)
    sentence_keys = {source_key(german) for german, _ in seen}
    splits["phrases"] = _new_phrases(phrases, seen, sentence_keys)
    splits["variants"] = _train_variants(variant_pairs, splits, seen)
    return splits


def _split_sentences(sentences, splits, seen, validation_fraction, test_fraction):
    """Append each sentence pair not in `seen` to its split, and add it to `seen`."""
    for pair in sentences:
        if pair not in seen:
            seen.add(pair)
            split = assign_split(pair[0], validation_fraction, test_fraction)
            splits[split].append(pair)


def _new_phrases(phrases, seen, sentence_keys):
    """The phrases not in `seen` whose source is no sentence's; adds them to `seen`."""
    kept = []
    for pair in phrases:
        if pair not in seen and source_key(pair[0]) not in sentence_keys:
            seen.add(pair)
            kept.append(pair)
    return kept


def _train_variants(variant_pairs, splits, seen):
    """The variant pairs that may be trained on; adds them to `seen`.

    Args:
        variant_pairs: `(sentence_pair, variant_pair)` pairs, see
            `classify_line`.
        splits: the sentence pairs per split.
        seen: the pairs kept so far.

    Returns:
        The variant pairs whose sentence pair is in train, that are not in
        `seen` and whose `source_key` is no validation or test sentence's.
    """
    held_out = {
        source_key(german)
        for split in ("validation", "test")
        for german, _ in splits[split]
    }
    train = set(splits["train"])
    kept = []
    for sentence_pair, pair in variant_pairs:
        in_train = sentence_pair in train
        if in_train and pair not in seen and source_key(pair[0]) not in held_out:
            seen.add(pair)
            kept.append(pair)
    return kept


@functools.lru_cache(maxsize=4)
def _cached_splits(path, modified_ns, size, validation_fraction, test_fraction):
    """`split_ding_lines` of a file, as tuples, once per file version."""
    del modified_ns, size  # part of the cache key only
    splits = split_ding_lines(read_ding_lines(path), validation_fraction, test_fraction)
    return {split: tuple(pairs) for split, pairs in splits.items()}


def load_ding_pairs(path=DING_PATH, validation_fraction=0.05, test_fraction=0.05):
    """The Ding sentence pairs split into train, validation and test, and extras.

    See `split_ding_lines` for the de-duplication and the split, and the
    module docstring for the sentence rule. The parse (a few seconds) is
    cached per process until the file changes; every call returns new lists.

    Args:
        path: the dictionary file (`DING_PATH` by default).
        validation_fraction: the share of German sentences in validation.
        test_fraction: the share of German sentences in test.

    Returns:
        A dict from `"train"`, `"validation"`, `"test"`, `"phrases"` and
        `"variants"` to lists of `(german, english)` string pairs, in the
        file's order.

    Raises:
        FileNotFoundError: the file is missing (install `trans-de-en`).

    Example:

    >>> pairs = load_ding_pairs()
    >>> sorted(pairs)
    ['phrases', 'test', 'train', 'validation', 'variants']
    >>> 15_000 < sum(len(pairs[split]) for split in SPLITS[:3]) < 22_000
    True
    """
    _check_ding_file(path)
    stat = os.stat(path)
    splits = _cached_splits(
        os.path.abspath(path),
        stat.st_mtime_ns,
        stat.st_size,
        float(validation_fraction),
        float(test_fraction),
    )
    return {split: list(pairs) for split, pairs in splits.items()}
