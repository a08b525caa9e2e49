"""Sources longer than a model's limit: split and joined, or cut and counted.

A translator reads at most `max_length - 1` SentencePiece pieces of a
source (the end id makes `max_length`). `LongInputs` wraps a translation
function (a list of str to a list of str) so that a longer source is
either translated in pieces that fit (`split_text`), their translations
joined with a space, or cut to the limit as the export does, and counts
the lines it split or cut.
"""

import re
import sys

from keras_transformer.alignment.pharaoh import format_pharaoh, parse_pharaoh
from keras_transformer.export.control_settings import Terms
from keras_transformer.special_ids import WORD_START

POLICIES = ("split", "truncate")
# Text that ends a sentence: punctuation, then closing quotes or brackets.
# ASCII punctuation also needs a space after it, where the next piece starts.
_SENTENCE_END = re.compile(r"(?:[.!?;:…]|[。！？；：])[\"'”’»)\]]*$")
_FULL_WIDTH_END = re.compile(r"[。！？；：][\"'”’»)\]]*$")


def check_policy(policy):
    """Raises ValueError unless `policy` is one of `POLICIES`."""
    if policy not in POLICIES:
        raise ValueError(
            f"long_inputs must be one of {', '.join(POLICIES)}, got {policy!r}."
        )


def split_text(text, tokenizer, limit):
    """`text` as a list of texts of at most `limit` pieces each.

    A text within the limit is returned whole. A longer one is cut between
    pieces into as few parts as the rules allow: each part takes as many
    whole sentences (ending in . ! ? ; : or the like, then a space; or
    full-width 。！？；：) as fit; a sentence longer than the limit is cut
    at the last word start that fits, and a word longer than the limit
    after `limit` pieces. Parts are cut from the text itself (no character
    is changed) and stripped of surrounding spaces.

    Args:
        text: a str.
        tokenizer: a `sentencepiece.SentencePieceProcessor`, the model's.
        limit: the most pieces a part may have, >= 1.

    Returns:
        A list of str; `[text]` when the text fits.

    Example:

    >>> import sentencepiece
    >>> from keras_transformer.data import train_tokenizer
    >>> tokenizer = train_tokenizer(["a b c. d e! f g"] * 40, vocab_size=14,
    ...                             byte_fallback=False)
    >>> tokenizer = sentencepiece.SentencePieceProcessor(model_proto=tokenizer.model)
    >>> tokenizer.encode("a b c.", out_type=str)
    ['▁', 'a', '▁', 'b', '▁', 'c', '.']
    >>> split_text("a b c. d e! f g", tokenizer, 7)
    ['a b c.', 'd e!', 'f g']
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}.")
    if len(tokenizer.encode(text)) <= limit:
        return [text]
    # A part cut inside a word re-encodes with a word-start piece more, so
    # parts are cut with a smaller budget until each fits.
    for budget in range(limit, 0, -1):
        parts = _cut(text, tokenizer, budget)
        if all(len(tokenizer.encode(part)) <= limit for part in parts):
            return parts
    return parts


def _cut(text, tokenizer, budget):
    """`text` cut into parts of at most `budget` pieces as encoded whole."""
    data = text.encode("utf-8")
    pieces = tokenizer.encode(text, out_type="proto").pieces
    # Byte offsets where a part may start, with the kind of cut there:
    # 2 after a sentence, 1 at a word start, 0 elsewhere.
    starts, kinds = [], []
    for index, piece in enumerate(pieces):
        starts.append(piece.begin)
        before = data[max(0, piece.begin - 64) : piece.begin].rstrip()
        before = before.decode("utf-8", errors="replace")
        if index and _FULL_WIDTH_END.search(before):
            kinds.append(2)
        elif piece.piece.startswith(WORD_START):
            kinds.append(2 if index and _SENTENCE_END.search(before) else 1)
        else:
            kinds.append(0)
    parts, first = [], 0
    while first < len(pieces):
        end = first + budget
        if end < len(pieces):
            candidates = range(end, first, -1)
            end = max(candidates, key=lambda index: (kinds[index], index))
            stop = starts[end]
        else:
            end, stop = len(pieces), len(data)
        part = data[starts[first] : stop].decode("utf-8", errors="replace").strip()
        if part:
            parts.append(part)
        first = end
    return parts


def joined_alignment(text, parts, translations, alignments):
    """The Pharaoh line of `text`, translated in `parts` (`split_text`), from
    the parts' lines: each part's links shifted by the words before it.

    A part's source words follow the words of `text` before it, minus one
    where the part begins inside a word (its first word goes on that one);
    its target words follow those of the translations before it, which
    are joined with a space.

    Example:

    >>> joined_alignment("a b. c d", ["a b.", "c d"], ["B A.", "D C"],
    ...                  ["0-1 1-0", "0-1 1-0"])
    '0-1 1-0 2-3 3-2'
    """
    links, position, target_words = set(), 0, 0
    for part, translation, line in zip(parts, translations, alignments, strict=True):
        start = text.index(part, position)
        source_words = len(text[:start].split())
        if start and not text[start - 1].isspace():
            source_words -= 1  # the part begins inside a word
        position = start + len(part)
        sure, _ = parse_pharaoh(line)
        links |= {(i + source_words, j + target_words) for i, j in sure}
        target_words += len(translation.split())
    return format_pharaoh(links)


def _for_part(name, value, index):
    """What part `index` of a split text gets of the text's `value` of
    `name`: the prefix and required phrases go with the first part only."""
    if index == 0:
        return value
    if name == "prefixes":
        return ""
    return Terms(banned=value.banned)


class LongInputs:
    """A translation function that splits (or cuts and counts) long sources.

    Called with a typed prefix per text (`prefixes`), it hands the first
    part of a split text that text's prefix, and the other parts none;
    with a `Terms` per text (`terms`), the first part its required phrases
    and every part its banned ones.

    Args:
        translate: a function of a list of str to a list of str (the
            engine: it cuts a source to `limit` pieces itself), and of
            `prefixes` and `terms` by keyword where they are given.
        tokenizer: the model's `sentencepiece.SentencePieceProcessor`.
        limit: the most source pieces the model reads (`max_length - 1`).
        policy: "split" (each part of a long source is translated, and the
            translations joined with a space) or "truncate" (the engine
            cuts it, with a warning at the first such line).
        batch_size: the most texts per call of `translate`.
        max_pieces: with "split", split sources longer than this many
            pieces instead, in parts of at most this many (1 to `limit`;
            None: `limit`), for a model that translates shorter sources
            better.
        align: None, or a function of (sources, targets), lists of str,
            to their word alignments as Pharaoh lines
            (an engine's `align`): then a call returns a
            `(translation, alignment)` pair per text, a split text's
            alignment joined from its parts' (`joined_alignment`).

    Attributes:
        long_lines: how many sources so far were longer than `limit`.
    """

    def __init__(
        self,
        translate,
        tokenizer,
        limit,
        policy="split",
        batch_size=32,
        max_pieces=None,
        align=None,
    ):
        check_policy(policy)
        if max_pieces is not None:
            if policy != "split":
                raise ValueError("max_input_length goes with long_inputs split.")
            if not 1 <= max_pieces <= limit:
                raise ValueError(
                    f"max_input_length must be 1 to the model's limit of {limit} "
                    f"pieces, got {max_pieces}."
                )
            limit = max_pieces
        self.translate = translate
        self.tokenizer = tokenizer
        self.limit = limit
        self.policy = policy
        self.batch_size = batch_size
        self.align = align
        self.long_lines = 0
        self.lines = 0

    def __call__(self, texts, prefixes=None, terms=None):
        given = {
            name: values
            for name, values in (("prefixes", prefixes), ("terms", terms))
            if values is not None
        }
        if self.policy == "truncate":
            for text in texts:
                self.lines += 1
                if len(self.tokenizer.encode(text)) > self.limit:
                    self._count_cut()
            translations = self.translate(texts, **given)
            if self.align is None:
                return translations
            alignments = self._batched(self.align, texts, translations)
            return list(zip(translations, alignments, strict=True))
        parts = [split_text(text, self.tokenizer, self.limit) for text in texts]
        self.lines += len(texts)
        self.long_lines += sum(len(text_parts) > 1 for text_parts in parts)
        flat = [part for text_parts in parts for part in text_parts]
        flat_given = {
            name: [
                _for_part(name, value, index)
                for text_parts, value in zip(parts, values, strict=True)
                for index in range(len(text_parts))
            ]
            for name, values in given.items()
        }
        translations = []
        for first in range(0, len(flat), self.batch_size):
            batch = slice(first, first + self.batch_size)
            translations += self.translate(
                flat[batch], **{name: v[batch] for name, v in flat_given.items()}
            )
        if self.align is not None:
            alignments = self._batched(self.align, flat, translations)
        joined, first = [], 0
        for text, text_parts in zip(texts, parts, strict=True):
            part_range = slice(first, first + len(text_parts))
            translation = " ".join(piece for piece in translations[part_range] if piece)
            if self.align is not None:
                alignment = joined_alignment(
                    text, text_parts, translations[part_range], alignments[part_range]
                )
                translation = (translation, alignment)
            joined.append(translation)
            first += len(text_parts)
        return joined

    def _batched(self, function, *columns):
        """`function` of `columns` (lists of one length), `batch_size` rows a call."""
        results = []
        for first in range(0, len(columns[0]), self.batch_size):
            results += function(
                *(column[first : first + self.batch_size] for column in columns)
            )
        return results

    def _count_cut(self):
        self.long_lines += 1
        if self.long_lines == 1:
            print(
                f"warning: line {self.lines} is longer than the limit of "
                f"{self.limit} pieces and was cut there (the policy "
                '"split" translates it whole)',
                file=sys.stderr,
            )

    def summary(self):
        """The line that counts the long sources, or None if there were none."""
        if not self.long_lines:
            return None
        if self.policy == "truncate":
            lines = (
                "1 line was"
                if self.long_lines == 1
                else f"{self.long_lines} lines were"
            )
            return (
                f"{lines} longer than the limit of {self.limit} pieces and "
                f"{'was' if self.long_lines == 1 else 'were'} cut"
            )
        lines = (
            "1 long line was"
            if self.long_lines == 1
            else f"{self.long_lines} long lines were"
        )
        return f"{lines} translated in pieces (the limit is {self.limit} pieces)"
