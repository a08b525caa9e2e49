"""Parsing the lines of the Ding dictionary into sentence pairs and phrases.

Each line of the Ding German-English file (see `keras_transformer.data.ding`)
reads

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
translation or a usage example.

A sentence sub-entry often has more than one variant on a side
(`Verstanden?; Haben Sie verstanden?`). Rule 2 keeps the first variants as
the sentence pair; every other pairing of a German and an English variant
that are both sentences is a *variant* pair.
"""

import re

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


def classify_line(line):
    """The sentence, phrase and variant pairs of one line, as three lists.

    Args:
        line: one line of the Ding file.

    Returns:
        `(sentences, phrases, variant_pairs)`: the lists of `(german,
        english)` pairs that `parse_line` and `parse_phrases` return, and
        the pairs of `parse_variants`, each as `(sentence_pair,
        variant_pair)` with the sentence pair of its sub-entry.
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
    return classify_line(line)[0]


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
    return classify_line(line)[1]


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
    return [pair for _, pair in classify_line(line)[2]]
