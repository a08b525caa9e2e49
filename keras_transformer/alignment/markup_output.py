"""Writing a translation with its markup back: each element of
`markup.split_markup` at the target words `markup.restore_markup` chose
for it, the text escaped and the markup verbatim, nested as in the source.
"""

import html
import re

PUNCTUATION = re.compile(r"[^\w\s]+")


def word_text(translation, words, k):
    """The text of word `k` of `translation`, whose `words` are (start,
    end) spans; None for a `k` before the first word or past the last."""
    return translation[slice(*words[k])] if 0 <= k < len(words) else None


def assemble(translation, words, elements, ranges, inside, mode):
    """The translation, escaped by `mode`'s rules, with its markup back.

    Args:
        translation: the translated plain text.
        words: (start, end) of each of its words, in characters.
        elements: `markup.split_markup`'s.
        ranges: (first, stop) of each element, the target words it goes
            around; an element of no words (`first == stop`) is written
            whole before word `first`, with its spacing.
        inside: {element index: the target word it goes inside, at its
            `offset`}.
        mode: "xml" or "html".
    """
    before = [[] for _ in range(len(words) + 1)]  # markup before word k
    after = [[] for _ in range(len(words) + 1)]  # end tags after word k - 1
    within = [[] for _ in range(len(words) + 1)]  # (offset, markup) in word k
    glued = [[] for _ in range(len(words) + 1)]  # right after word k - 1
    depth, children = [], [[] for _ in elements]
    for index, element in enumerate(elements):
        depth.append(0 if element.parent is None else depth[element.parent] + 1)
        if element.parent is not None:
            children[element.parent].append(index)

    cuts = _punctuation_cuts(translation, words, elements, ranges, children)
    empty = set()  # elements of no words: written whole, their children within
    for index, (element, (first, stop)) in enumerate(
        zip(elements, ranges, strict=True)
    ):
        if element.parent in empty:
            empty.add(index)
        elif index in inside:
            within[inside[index]].append((element.offset, (1, index), element.start))
        elif first == stop:  # by a word, or at the end, with its spacing
            empty.add(index)
            markup = _whole(index, elements, children)
            space_before, space_after = _spacing(index, elements, children)
            if element.word:  # out of the word it stood in: a word of its own
                space_before = space_after = True
            elif element.glued_to:  # glued to the same text only
                before_it, after_it = (
                    word_text(translation, words, k) for k in (first - 1, first)
                )
                space_before = space_before or before_it != element.glued_to
                space_after = space_after or after_it != element.glued_to
            glued_to_word = first and not (element.end or space_before)
            if glued_to_word:
                # to the end of the word before it: "(%d", "one<br>"
                glued[first].append(markup)
            elif first < len(words):
                before[first].append(markup + " " * space_after)
            else:
                before[first].append(" " * space_before + markup)
        else:  # around words, in them past the punctuation the source left out
            opening, closing = cuts[index]
            if opening:
                within[first].append((opening, (1, index), element.start))
            else:
                before[first].append(element.start)
            if closing:  # end tags before start tags, the innermost first
                ending = (closing, (0, -depth[index], -index), element.end)
                within[stop - 1].append(ending)
            else:
                after[stop].append((-depth[index], -index, element.end))
    pieces, position = [], 0
    for k in range(len(words) + 1):
        start = words[k][0] if k < len(words) else len(translation)
        end_of_last = words[k - 1][1] if k else 0
        word = translation[position:end_of_last]  # word k - 1
        last = 0
        for offset, _, markup in sorted(within[k - 1]) if k else ():
            pieces += [_escape(word[last:offset], mode), markup]
            last = offset
        pieces.append(_escape(word[last:], mode))
        pieces.extend(glued[k])
        pieces.extend(tag for _, _, tag in sorted(after[k]))
        pieces.append(_escape(translation[end_of_last:start], mode))
        pieces.extend(before[k])
        position = start
    pieces.append(_escape(translation[position:], mode))
    return "".join(pieces)


def _punctuation_cuts(translation, words, elements, ranges, children):
    """{index: (opening, closing)} of each element around target words:
    where in its first word its start tag goes, past the word's leading
    punctuation, and where in its last word its end tag goes, before the
    word's trailing punctuation, for an element whose source text does not
    start (end) with punctuation; 0 for before (after) the word. An element
    is cut only where each element within it that starts (ends) in the
    same word is, so tags stay nested."""
    cuts = {}
    for index in reversed(range(len(elements))):  # children before parents
        (first, stop), element = ranges[index], elements[index]
        if first == stop:
            continue
        inner = [child for child in children[index] if child in cuts]
        head = word_text(translation, words, first)
        lead = PUNCTUATION.match(head)
        opening = lead.end() if lead and lead.end() < len(head) else 0
        if element.opens_with_punctuation or any(
            ranges[child][0] == first and not cuts[child][0] for child in inner
        ):
            opening = 0
        tail = word_text(translation, words, stop - 1)
        closing = re.search(r"[^\w\s]*$", tail).start()
        if (
            closing == len(tail)
            or element.closes_with_punctuation
            or any(ranges[child][1] == stop and not cuts[child][1] for child in inner)
        ):
            closing = 0
        cuts[index] = opening, closing
    return cuts


def _whole(index, elements, children):
    """An element of no words with the elements within it, as one text."""
    element, inner = elements[index], []
    for position, child in enumerate(children[index]):
        # a space where one stood, or for an element out of the word it stood in
        spaced = elements[child].space_before or elements[child].word
        inner += [" "] * bool(spaced and position) + [_whole(child, elements, children)]
    return element.start + "".join(inner) + element.end


def _spacing(index, elements, children):
    """Whether whitespace stood before and after an element of no words:
    its own, or that of the first and the last element within it."""
    element, inner = elements[index], children[index]
    before, after = element.space_before, element.space_after
    if inner:
        before = before or _spacing(inner[0], elements, children)[0]
        after = after or _spacing(inner[-1], elements, children)[1]
    return before, after


def _escape(text, mode):
    """Text as it may stand in the output: in XML, `&`, `<` and `>` escaped;
    in HTML only a `<` that would open a tag and an `&` that would read as
    an entity, so that text such as `<%s>` or `AT&T` stays as written."""
    if mode == "xml":
        return html.escape(text, quote=False)
    text = re.sub(r"&(?=#?\w+;)", "&amp;", text)
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text)
