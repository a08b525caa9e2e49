"""German-English sentence pairs from the Ding dictionary (Debian `trans-de-en`).

The Ding dictionary (Frank Richter, TU Chemnitz, GPL 2 or later) is read at run
time from the file that `apt-get install trans-de-en` puts at `DING_PATH`; none
of it is copied into this repository. Each line of the file reads

    German sub-entry | German sub-entry ... :: English sub-entry | ...

where the i-th German sub-entry translates the i-th English one, `; `
separates variants inside a sub-entry, `{...}` are grammar tags, `[...]`
usage notes, `(...)` explanations or optional words, `<...>` alternative
spellings and `/ABC/` abbreviations. Many sub-entries are example sentences,
and those are what this module extracts.

The sentence rule (applied to both sides of an aligned sub-entry):

1. The sub-entry carries no `{...}` grammar tag (tags mark headwords).
2. Only its first `; ` variant is used.
3. Notes are removed: `{...}`, `[...]`, `(...)` (explanations, or optional
   words whose removal leaves a grammatical sentence), `<...>` and `/ABC/`;
   whitespace is collapsed, no space is left before `.,;:!?` and the
   typographic apostrophe `’` becomes `'`.
4. What remains starts with an upper-case letter or a digit, ends with `.`,
   `!` or `?`, has at least `MIN_SENTENCE_WORDS` words, and has no
   placeholder `…` and no spaced ` / ` (alternatives of several words, which
   cannot be resolved). Word alternatives without spaces (`each/every`,
   `er/sie`, in about 8% of the pairs) are kept as written.

Every other aligned sub-entry with at least two words on both sides after the
same cleaning (and no `…` or ` / `) is a *phrase*: a headword with its
translation or a usage example. Phrases are extra training data only.

A sentence sub-entry often has more than one variant on a side
(`Verstanden?; Haben Sie verstanden?`). Rule 2 keeps the first variants as
the sentence pair; every other pairing of a German and an English variant
that are both sentences is a *variant* pair: extra training data, kept only
for sub-entries whose sentence pair is in train and never sharing a
`source_key` with a validation or test sentence.

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
import re
import unicodedata

from keras_transformer.data.text_files import read_lines

DING_PATH = "/usr/share/trans/de-en"
SPLITS = ("train", "validation", "test", "phrases", "variants")
MIN_SENTENCE_WORDS = 3
MIN_PHRASE_WORDS = 2

_NOTE = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|\([^()]*\)|<[^<>]*>")
_ABBREVIATION = re.compile(r"(?<!\S)/[^/\s]+/(?!\S)")
_SPACE_BEFORE_PUNCTUATION = re.compile(r"\s+([.,;:!?])")
_SENTENCE_END = (".", "!", "?")


def clean(text):
    """Remove the dictionary's notes from `text` and normalise its spacing.

    Args:
        text: one variant or sub-entry of a Ding line.

    Returns:
        The text without `{...}`, `[...]`, `(...)`, `<...>` and `/ABC/`, with
        single spaces, no space before punctuation and `’` replaced by `'`.

    Example:

    >>> clean("Das  Interesse hat sich verlagert (von … zu). [econ.]")
    'Das Interesse hat sich verlagert.'
    >>> clean("to pick out <> sth. {picked; picked} [coll.] /POS/")
    'to pick out sth.'
    """
    while any(bracket in text for bracket in "{[(<"):
        text, count = _NOTE.subn(" ", text)  # innermost first, then outward
        if not count:
            break
    if "/" in text:
        text = _ABBREVIATION.sub(" ", text)
    text = " ".join(text.replace("’", "'").split())
    return _SPACE_BEFORE_PUNCTUATION.sub(r"\1", text)


def first_variant(text):
    """The first of the `; `-separated variants, ignoring `; ` inside brackets.

    Args:
        text: one sub-entry of a Ding line.

    Returns:
        The text up to the first `; ` that is outside all brackets.

    Example:

    >>> first_variant("Verstanden?; Haben Sie verstanden?")
    'Verstanden?'
    >>> first_variant("to deal {dealt; dealt}; to trade")
    'to deal {dealt; dealt}'
    """
    start = text.find("; ")
    while start != -1:
        prefix = text[:start]
        opened = sum(prefix.count(bracket) for bracket in "{[(")
        if opened <= sum(prefix.count(bracket) for bracket in "}])"):
            return prefix
        start = text.find("; ", start + 2)
    return text


def variants(text):
    """All `; `-separated variants of a sub-entry, ignoring `; ` in brackets.

    Args:
        text: one sub-entry of a Ding line.

    Returns:
        A list of the variants, `first_variant(text)` first.

    Example:

    >>> variants("Verstanden?; Haben Sie verstanden? [formal]")
    ['Verstanden?', 'Haben Sie verstanden? [formal]']
    """
    found = []
    while True:
        variant = first_variant(text)
        found.append(variant)
        if len(variant) == len(text):
            return found
        text = text[len(variant) + 2 :]


def _usable(text):
    """Whether a cleaned variant has no placeholder and no open alternative."""
    return bool(text) and "…" not in text and "..." not in text and " / " not in text


def is_sentence(text):
    """Whether a cleaned variant has the shape of a sentence (rule 4).

    Args:
        text: a variant after `clean`.

    Returns:
        True when it starts with an upper-case letter or a digit, ends with
        `.`, `!` or `?`, has at least `MIN_SENTENCE_WORDS` words and no `…`
        or ` / `.

    Example:

    >>> is_sentence("Er hat einfach blau gemacht.")
    True
    >>> is_sentence("Gute Besserung!"), is_sentence("to be a notch above sth.")
    (False, False)
    """
    return (
        _usable(text)
        and (text[0].isupper() or text[0].isdigit())
        and text.endswith(_SENTENCE_END)
        and len(text.split()) >= MIN_SENTENCE_WORDS
    )


def _aligned_parts(line):
    """The aligned `(german, english)` sub-entries of one line, uncleaned.

    An empty list for comments, malformed lines and lines whose two sides have
    different numbers of sub-entries.
    """
    line = line.strip()
    if not line or line.startswith("#") or line.count(" :: ") != 1:
        return []
    german, english = line.split(" :: ")
    german_parts, english_parts = german.split("|"), english.split("|")
    if len(german_parts) != len(english_parts):
        return []
    return list(zip(german_parts, english_parts, strict=True))


def _is_phrase(text):
    return _usable(text) and len(text.split()) >= MIN_PHRASE_WORDS


def _variant_pairs(de, en):
    """The other pairings of the sentence variants of a sentence sub-entry."""
    german = [clean(variant) for variant in variants(de)]
    english = [clean(variant) for variant in variants(en)]
    return [
        (source, target)
        for source in german
        for target in english
        if (source, target) != (german[0], english[0])
        and is_sentence(source)
        and is_sentence(target)
    ]


def _classify_line(line):
    """The sentence, phrase and variant pairs of one line, as three lists.

    Each variant pair comes as `(sentence_pair, variant_pair)`.
    """
    sentences, phrases, variant_pairs = [], [], []
    for de, en in _aligned_parts(line):
        de, en = de.strip(), en.strip()
        german = clean(first_variant(de))
        if not _is_phrase(german):  # sentences are phrase-shaped too
            continue
        english = clean(first_variant(en))
        if not _is_phrase(english):
            continue
        tagged = "{" in de or "{" in en
        if not tagged and is_sentence(german) and is_sentence(english):
            sentences.append((german, english))
            variant_pairs.extend(
                ((german, english), pair) for pair in _variant_pairs(de, en)
            )
        else:
            phrases.append((german, english))
    return sentences, phrases, variant_pairs


def parse_line(line):
    """The German-English sentence pairs of one dictionary line.

    Args:
        line: one line of the Ding file.

    Returns:
        A list of `(german, english)` pairs that follow the sentence rule of
        the module docstring, in the order of the line.

    Example:

    >>> parse_line(
    ...     "Fahne {f} [ugs.] | Er hat eine Fahne. | Sie lebt in Greenwich.; "
    ...     "Sie lebt dort. :: alcohol breath | His breath smells (of booze). "
    ...     "[coll.] | She lives in Greenwich."
    ... )
    [('Er hat eine Fahne.', 'His breath smells.'), ('Sie lebt in Greenwich.', \
'She lives in Greenwich.')]
    """
    return _classify_line(line)[0]


def parse_phrases(line):
    """The multi-word pairs of one line that are not sentence pairs.

    Args:
        line: one line of the Ding file.

    Returns:
        A list of cleaned `(german, english)` pairs with at least
        `MIN_PHRASE_WORDS` words on each side, no `…` and no ` / `, that
        `parse_line` does not return.

    Example:

    >>> parse_phrases(
    ...     "Aalbestand {m} | Aalbestände {pl} | Aale fangen {v} :: "
    ...     "eel stock | eel stocks | to catch eels"
    ... )
    [('Aale fangen', 'to catch eels')]
    """
    return _classify_line(line)[1]


def parse_variants(line):
    """The other variant pairings of the sentence sub-entries of one line.

    Args:
        line: one line of the Ding file.

    Returns:
        A list of cleaned `(german, english)` pairs: for each sentence pair
        that `parse_line` returns, every pairing of its sub-entry's German
        and English `; ` variants that are both sentences, but the first
        with the first.

    Example:

    >>> parse_variants("Ich komme gleich.; Ich bin gleich da. :: I'm coming soon.")
    [('Ich bin gleich da.', "I'm coming soon.")]
    """
    return [pair for _, pair in _classify_line(line)[2]]


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
    digest = hashlib.sha256((salt + source_key(source)).encode("utf-8")).digest()
    position = int.from_bytes(digest[:8], "big") / 2**64  # uniform in [0, 1)
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
    splits = {split: [] for split in SPLITS}
    seen, sentence_keys, phrase_candidates, variant_candidates = set(), set(), [], []
    for line in lines:
        sentences, phrases, variant_pairs = _classify_line(line)
        for pair in sentences:
            if pair not in seen:
                seen.add(pair)
                sentence_keys.add(source_key(pair[0]))
                split = assign_split(pair[0], validation_fraction, test_fraction)
                splits[split].append(pair)
        phrase_candidates.extend(phrases)
        variant_candidates.extend(variant_pairs)
    for pair in phrase_candidates:
        if pair not in seen and source_key(pair[0]) not in sentence_keys:
            seen.add(pair)
            splits["phrases"].append(pair)
    held_out = {
        source_key(german)
        for split in ("validation", "test")
        for german, _ in splits[split]
    }
    train = set(splits["train"])
    for sentence_pair, pair in variant_candidates:
        in_train = sentence_pair in train
        if in_train and pair not in seen and source_key(pair[0]) not in held_out:
            seen.add(pair)
            splits["variants"].append(pair)
    return splits


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
