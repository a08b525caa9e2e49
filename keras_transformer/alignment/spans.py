"""Protected spans the model writes itself: which they are, and out again.

A protected span (a placeholder, a URL) that `split_markup` takes out of
a source comes back where `restore_markup` puts it, once. A model may
write one of its own into the plain translation (a `%s` into a text that
lost its placeholder): `protected_spans` lists a source's spans, to ban
from its translation, and `without_spans` takes out those written anyway,
with their links, before `restore_markup`.
"""

from keras_transformer.alignment.markup import PROTECTED
from keras_transformer.alignment.pharaoh import format_pharaoh, parse_pharaoh


def protected_spans(elements):
    """The protected spans among `split_markup`'s elements, in order: the
    text that must come back once each, put back by `restore_markup`.

    Example:

    >>> from keras_transformer.alignment import split_markup
    >>> protected_spans(split_markup("<b>%s</b> of {count} (<code>%d</code>)")[1])
    ['%s', '{count}']
    """
    return [element.start for element in elements if PROTECTED.fullmatch(element.start)]


def without_spans(translation, links, spans):
    """`translation` of a plain text without the protected `spans` that the
    model wrote itself, where `restore_markup` puts them back.

    A span is cut out of the word it is in; a word that was spans only is
    taken out, with its links, and the target words after it renumbered.

    Args:
        translation: the translated plain text.
        links: its alignment, a Pharaoh line.
        spans: `protected_spans` of the source.

    Returns:
        `(translation, links, removed)`: the text, its Pharaoh line, and how
        many spans were taken out.

    Example:

    >>> without_spans("Ouvrir %s avec (%s)", "0-0 1-1 2-2 3-3", ["%s"])
    ('Ouvrir avec ()', '0-0 2-1 3-2', 2)
    """
    if not spans:
        return translation, links, 0
    kept, renumbered, removed = [], {}, 0
    for index, word in enumerate(translation.split()):
        for span in spans:
            removed += word.count(span)
            word = word.replace(span, "")
        if word:  # else the word was spans only
            renumbered[index] = len(kept)
            kept.append(word)
    sure, possible = parse_pharaoh(links)
    pairs = {(i, renumbered[j]) for i, j in sure | possible if j in renumbered}
    return " ".join(kept), format_pharaoh(pairs), removed
