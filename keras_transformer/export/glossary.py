"""Terms from files: a glossary of source and target terms, and the
line-aligned constraints of `translate --constraints`.

`translate --glossary terms.tsv` reads a file of `source term<TAB>target
term` lines. Where a line to translate contains a source term, its
translation must contain the target term (a required phrase of the
SavedModel's controlled signatures, `Terms.required`). TensorFlow-free:
the command line reads and checks the file before it loads anything.

Matching rules: a source term matches where it occurs as whole words
(not inside a longer word; a term may span several words), ignoring case
(Python's `re.IGNORECASE`: "ÄRZTE" matches "Ärzte", "STRASSE" does not
match "Straße"). Target terms are used as written. Lines that are empty
or begin with `#` are skipped; any other line must hold exactly one tab
with text on both sides, or the file is refused with its line number.
A source term listed twice keeps every target term given for it.

`translate --constraints FILE` reads a line per input line: its phrases,
tab-separated, that the translation must contain; a phrase marked with a
leading `!` must not appear instead (`constraint_terms`). An empty line
sets none.
"""

import dataclasses
import re

from keras_transformer.export.control_settings import Terms


@dataclasses.dataclass(frozen=True)
class Glossary:
    """Source terms and their target terms, in the file's order.

    Args:
        entries: (source term, target term) pairs.

    Example:

    >>> glossary = Glossary((("Vertrag", "contract"), ("Frist", "deadline")))
    >>> glossary.terms("Der Vertrag endet.")
    Terms(required=('contract',), banned=())
    >>> glossary.terms("Die Vertragsfrist")  # inside words: no match
    Terms(required=(), banned=())
    """

    entries: tuple

    def __post_init__(self):
        patterns = tuple(
            re.compile(r"(?<!\w)" + re.escape(source) + r"(?!\w)", re.IGNORECASE)
            for source, _ in self.entries
        )
        object.__setattr__(self, "_patterns", patterns)

    @classmethod
    def from_file(cls, path):
        """The glossary of a `source<TAB>target` file (see the module
        docstring); a ValueError names the first malformed line."""
        entries = []
        with open(path, encoding="utf-8") as file:
            for number, line in enumerate(file, 1):
                line = line.rstrip("\r\n")
                if not line.strip() or line.startswith("#"):
                    continue
                fields = [field.strip() for field in line.split("\t")]
                if len(fields) != 2 or not all(fields):
                    raise ValueError(
                        f"{path}, line {number}: expected 'source term<TAB>target "
                        f"term', got {line!r}."
                    )
                entries.append(tuple(fields))
        return cls(tuple(entries))

    def terms(self, text):
        """The `Terms` of one source text: the target terms of the source
        terms it contains, each once, in the glossary's order."""
        required = []
        for (_, target), pattern in zip(self.entries, self._patterns, strict=True):
            if target not in required and pattern.search(text):
                required.append(target)
        return Terms(required=required)


BANNED_MARK = "!"  # marks a phrase of a constraints line that must not appear


def constraint_terms(line, number):
    """The `Terms` of one line of a constraints file (see the module
    docstring); a ValueError names line `number` where a phrase is empty or
    both required and banned.

    Example:

    >>> constraint_terms("contract\\tnotice period\\t!agreement", 1)
    Terms(required=('contract', 'notice period'), banned=('agreement',))
    >>> constraint_terms("", 2)
    Terms(required=(), banned=())
    """
    if not line.strip():
        return Terms()
    phrases = [phrase.strip() for phrase in line.split("\t")]
    banned = [p[len(BANNED_MARK) :].strip() for p in phrases if p.startswith("!")]
    required = [p for p in phrases if not p.startswith(BANNED_MARK)]
    try:
        return Terms(required=required, banned=banned)
    except ValueError as error:
        raise ValueError(f"constraints line {number}: {error}") from error
