"""Markup carried through a translation: tags and protected spans, by alignment.

A source with inline markup (`Open <b>the file</b> with %s`) is split into
the plain text that the model translates (`Open the file with`) and its
elements, each tied to source words: a paired tag to the words between
its start and end tags; a void or self-closing tag, a comment, a
protected span (a printf placeholder, `{name}`, `{{name}}`, a URL, an
e-mail address) or an element marked "do not translate" (`<code>`, or
`translate="no"`, whole and unchanged) to the word it stands before.
After translation, each element is put back around, or before, the target
words that the hard word alignment links to its source words, as Bergamot
rebuilds tags. Tags and protected spans come back verbatim, attributes
and all, each as often as in the source, and the output is well-formed
whenever the input is: ranges are kept nested (a child within its parent,
siblings apart). Entities are read as their characters; in XML the output
escapes `&`, `<` and `>` in the translated text, in HTML only a `<` that
would open a tag and an `&` that would read as an entity (HTML reads a
bare `<` or `&` as text).

Pure Python: `split_markup` before translating, `restore_markup` after,
with the alignment of the two plain texts (`Translator.align`).
"""

import dataclasses
import html
import re

from keras_transformer.alignment.markup_output import (
    PUNCTUATION,
    assemble,
    word_text,
)
from keras_transformer.alignment.pharaoh import parse_pharaoh

MODES = ("xml", "html")
# HTML's void elements: a start tag without an end tag.
VOID_ELEMENTS = frozenset(
    "area base br col embed hr img input link meta param source track wbr".split()
)
NOT_TRANSLATED = frozenset(["code"])  # and every element with translate="no"
_TAG = re.compile(
    r"<!--.*?-->|<(/?)([A-Za-z][\w:.-]*)((?:[^>\"']|\"[^\"]*\"|'[^']*')*)>", re.S
)
_TRANSLATE_NO = re.compile(r"""\btranslate\s*=\s*["']?no\b""", re.I)
PROTECTED = re.compile(
    r"%(?:\d+\$)?[-+#0]*(?:\d+|\*)?(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L)?[diouxXeEfFgGcs%]"
    r"|\{\{\s*[\w.]+\s*\}\}|\{[\w.]*\}"
    r"|\b(?:https?|ftp)://[^\s<>\"']*[^\s<>\"'.,;:!?)]"
    r"|\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
)


@dataclasses.dataclass
class Element:
    """A piece of markup and the source words it goes with.

    Attributes:
        start: the verbatim text put before the words: a start tag, a void
            tag, a protected span, or a whole element not translated.
        end: the verbatim end tag; "" for an element of no words.
        first, stop: the source words covered, `range(first, stop)`; for an
            element of no words, `first == stop` is the word it stands
            before (the number of words at the end).
        parent: the index of the enclosing element, or None.
        space_before, space_after: whether whitespace (or the start or end
            of the text, or a tag) stood before and after the element in
            the source, so that it comes back with its spacing where it
            covers no target words.
        word, offset: for an element of no words that stood inside a
            source word (`'%s'`, `<%s>`), that word of the plain text and
            the place in it; "" and 0 otherwise.
        glued_to: for a protected span glued to a source word (`%s:`,
            `(%d`), that word; it is glued to its target neighbour only if
            that is the same text, else it stands apart (`%s pour`, not
            `%spour`). "" otherwise.
        opens_with_punctuation, closes_with_punctuation: whether the text
            within a paired element starts and ends with punctuation. Where
            not, the element leaves out the punctuation at the start of
            its first target word and at the end of its last
            (`<b>Datei</b>.` gives `<b>file</b>.`, not `<b>file.</b>`).
    """

    start: str
    end: str
    first: int
    stop: int
    parent: int | None
    space_before: bool = False
    space_after: bool = False
    word: str = ""
    offset: int = 0
    glued_to: str = ""
    opens_with_punctuation: bool = False
    closes_with_punctuation: bool = False


def split_markup(text, mode="xml"):
    """`text` as the plain text to translate and its markup `Element`s.

    Args:
        text: a source with inline tags, entities and protected spans.
        mode: "xml" (every tag is closed or self-closing) or "html" (void
            elements such as `<br>` have no end tag).

    Returns:
        `(plain, elements)`: the text without markup, and the elements in
        document order (a parent before its children).

    Raises:
        ValueError: `mode` is unknown, or the markup is not well-formed (an
            end tag that closes no open element, or an element never
            closed), naming the tag.

    Example:

    >>> plain, elements = split_markup("Open <b>the file</b> with %s.")
    >>> plain
    'Open the file with .'
    >>> [(e.start, e.end, e.first, e.stop) for e in elements]
    [('<b>', '</b>', 1, 3), ('%s', '', 4, 4)]
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}.")
    # spans: [start, end, a, b, parent, space before, space after], a and b
    # offsets in the plain text
    plain, spans, open_tags = [], [], []
    hidden = None  # (offset in text, depth) of an element not translated

    def offset():
        return sum(len(chunk) for chunk in plain)

    def after_space():
        """Whether whitespace, or the start of the text, is before."""
        last = next((chunk for chunk in reversed(plain) if chunk), " ")
        return last[-1:].isspace()

    def add_void(markup, next_character):
        """An element of no words; `next_character` follows it in the source."""
        at, before, after = offset(), after_space(), _spaced(next_character)
        spans.append([markup, "", at, at, _parent(open_tags), before, after])

    def add_text(chunk):
        position = 0
        for match in PROTECTED.finditer(chunk):
            plain.append(chunk[position : match.start()])
            add_void(match[0], chunk[match.end() : match.end() + 1])
            position = match.end()
        plain.append(chunk[position:])

    position = 0
    for match in _TAG.finditer(text):
        if hidden is None:
            add_text(html.unescape(text[position : match.start()]))
        position = match.end()
        closing, name, attributes = match[1], (match[2] or "").lower(), match[3]
        following = text[match.end() : match.end() + 1]
        if not name:  # a comment: a void element (inside a hidden one: hidden)
            if hidden is None:
                add_void(match[0], following)
        elif closing:
            if not open_tags or open_tags[-1][0] != name:
                expected = f"</{open_tags[-1][0]}>" if open_tags else "no end tag"
                raise ValueError(
                    f"Not well-formed markup: {match[0]} where {expected} was due."
                )
            _, index = open_tags.pop()
            if hidden is not None and len(open_tags) == hidden[1]:
                add_void(text[hidden[0] : match.end()], following)
                hidden = None
            elif index is not None:
                spans[index][1], spans[index][3] = match[0], offset()
                spans[index][6] = _spaced(following)
        elif (attributes or "").rstrip().endswith("/") or (
            mode == "html" and name in VOID_ELEMENTS
        ):
            if hidden is None:
                add_void(match[0], following)
                if offset() and not after_space():
                    plain.append(" ")  # a line break or image parts words
        elif hidden is not None:
            open_tags.append((name, None))
        elif name in NOT_TRANSLATED or _TRANSLATE_NO.search(attributes or ""):
            hidden = (match.start(), len(open_tags))
            open_tags.append((name, None))
        else:
            spans.append(
                [match[0], "", offset(), None, _parent(open_tags), after_space(), False]
            )
            open_tags.append((name, len(spans) - 1))
    if open_tags:
        raise ValueError(
            f"Not well-formed markup: <{open_tags[-1][0]}> is never closed."
        )
    add_text(html.unescape(text[position:]))
    plain = "".join(plain)
    words = [match.span() for match in re.finditer(r"\S+", plain)]
    elements = []
    for start, end, a, b, parent, x, y in spans:
        element = Element(start, end, *_word_range(words, a, b), parent, x, y)
        if not end and a == b and element.stop > element.first:  # in a word
            first, last = words[element.first]
            element.stop = element.first
            element.word, element.offset = plain[first:last], a - first
        elif not end and PROTECTED.fullmatch(start):
            before = [plain[s:e] for s, e in words if e == a and not x]
            after = [plain[s:e] for s, e in words if s == a and not y]
            element.glued_to = (before + after + [""])[0]
        if end:
            within = plain[a:b].strip()
            element.opens_with_punctuation = bool(PUNCTUATION.match(within))
            element.closes_with_punctuation = bool(PUNCTUATION.match(within[-1:]))
        elements.append(element)
    return plain, elements


def _spaced(next_character):
    """Whether markup followed by `next_character` is apart from the next
    word: glued to it only where a character of text follows."""
    return next_character in ("", "<") or next_character.isspace()


def _parent(open_tags):
    """The index of the innermost open element that is translated, or None."""
    for _, index in reversed(open_tags):
        if index is not None:
            return index
    return None


def _word_range(words, a, b):
    """(first, stop) of the words (character spans) that [a, b) overlaps;
    for none, the word at or after `a` twice."""
    covered = [i for i, (start, end) in enumerate(words) if start < b and end > a]
    if covered:
        return covered[0], covered[-1] + 1
    after = next((i for i, (start, _) in enumerate(words) if start >= a), len(words))
    return after, after


def restore_markup(translation, elements, links, mode="xml"):
    """`translation` of a `split_markup` plain text, with its markup back.

    Each element goes around the target words linked to its source words
    (from the first such word to the last), kept within its parent's and
    apart from the siblings placed before it. An element of no words, or
    whose words have no links, goes before the target word linked to the
    source word it stood before (the first target word after the words
    linked to the source words before it, where that word has no links),
    and covers no words, with the spacing it had in the source (see
    `Element` for punctuation at a tag's edges and for placeholders glued
    to a word). Text is escaped (`mode`'s rules); markup is verbatim.

    Args:
        translation: the translated plain text.
        elements: `split_markup`'s elements of the source.
        links: the alignment of the plain source and `translation`: a
            Pharaoh line, or a set of (source word, target word) pairs.
        mode: `split_markup`'s.

    Returns:
        The translation with the elements in place.

    Example:

    >>> plain, elements = split_markup("Open <b>the file</b> with %s.")
    >>> restore_markup("Ouvrir le fichier avec .", elements,
    ...                "0-0 1-1 2-2 3-3 4-4")
    'Ouvrir <b>le fichier</b> avec %s.'
    """
    if isinstance(links, str):
        sure, possible = parse_pharaoh(links)
        links = sure | possible
    words = [match.span() for match in re.finditer(r"\S+", translation)]
    targets = {}
    for i, j in links:
        if j < len(words):
            targets.setdefault(i, set()).add(j)
    ranges, inside, taken = [], {}, {}  # taken: target word: source word in it
    for index, element in enumerate(elements):
        bounds = (0, len(words))
        if element.parent is not None:
            bounds = ranges[element.parent]
        linked = set().union(
            *(targets.get(i, ()) for i in range(element.first, element.stop))
        )
        same = [  # target words copied from the source word it stood inside,
            j  # and not taken by another source word's elements
            for j in sorted(targets.get(element.first, ()))
            if element.word
            and word_text(translation, words, j) == element.word
            and taken.get(j, element.first) == element.first
        ]
        if same and bounds[0] <= same[0] < bounds[1]:
            taken[same[0]] = element.first
            inside[index] = same[0]
            ranges.append((same[0], same[0]))
            continue
        if linked:
            first, stop = min(linked), max(linked) + 1
        else:
            first = stop = _target_position(targets, element.first)
        siblings = [
            placed
            for placed, other in zip(ranges, elements, strict=False)
            if other.parent == element.parent
        ]
        ranges.append(_apart(*_clip(first, stop, bounds), siblings, bounds))
    return assemble(translation, words, elements, ranges, inside, mode)


def _target_position(targets, word):
    """Where the place before source word `word` falls among the target
    words: before the first target word of `word`, else after the last
    target word of the words before it, else at the start."""
    if targets.get(word):
        return min(targets[word])
    before = [j for i, js in targets.items() if i < word for j in js]
    return max(before) + 1 if before else 0


def _clip(first, stop, bounds):
    """[first, stop) moved within `bounds`, never reversed."""
    low, high = bounds
    first = min(max(first, low), high)
    return first, min(max(stop, first), high)


def _apart(first, stop, siblings, bounds):
    """[first, stop) kept within `bounds` and off the `siblings` ranges
    (disjoint): a range that starts inside one starts after it, one that
    runs into one ends before it."""
    for low, high in sorted(siblings):
        if low < stop and first < high or low <= first < high:
            if low <= first:
                first, stop = _clip(high, max(stop, high), bounds)
            else:
                stop = low
    return first, stop
