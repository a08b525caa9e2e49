"""The lines a command reads: decoded, and with the files given a line each.

`translate` and `score` read text a line at a time (`decoded_lines`);
`translate` may read, beside its input, a file of prefixes and one of
constraints with a line for each input line (`with_line_files`), whose
values reach the translation function by keyword.
"""

import itertools
import sys

from keras_transformer.export.glossary import constraint_terms


def decoded_lines(lines):
    """The lines (bytes) as str without their line ends; a line that is not
    valid UTF-8 has its bad bytes replaced by U+FFFD, with a warning on
    stderr naming the line."""
    for number, line in enumerate(lines, 1):
        line = line.rstrip(b"\r\n")
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError:
            print(
                f"warning: line {number} is not valid UTF-8; its bad bytes were "
                "replaced by U+FFFD",
                file=sys.stderr,
            )
            yield line.decode("utf-8", errors="replace")


def with_line_files(function, texts, prefixes=None, constraints=None):
    """`(run, items)` for `translate_batches`: `function` and `texts`, or
    with line-aligned `prefixes` or `constraints` (iterables of bytes, or
    None), a function of (text, {name: value}) items that calls
    `function(texts, prefixes=..., terms=...)` with those given (terms:
    `glossary.constraint_terms` of each constraints line), and the items."""
    streams = {}
    if prefixes is not None:
        streams["prefixes"] = decoded_lines(prefixes)
    if constraints is not None:
        lines = enumerate(decoded_lines(constraints), 1)
        streams["terms"] = (constraint_terms(line, number) for number, line in lines)
    if not streams:
        return function, texts

    def run(batch):
        given = {name: [values[name] for _, values in batch] for name in streams}
        return function([text for text, _ in batch], **given)

    return run, _aligned(texts, streams)


def _aligned(texts, streams):
    """(text, {name: value}) items of line-aligned `texts` and `streams`
    ({name: iterable}); a ValueError where one ends before another."""
    names = list(streams)
    rows = itertools.zip_longest(texts, *streams.values())
    for number, (text, *values) in enumerate(rows, 1):
        ended = [
            FILES[n] for n, value in zip(names, values, strict=True) if value is None
        ]
        if text is None or ended:
            longer, shorter = (
                ("the input", ended[0])
                if text is not None
                else (
                    next(FILES[n] for n in names if FILES[n] not in ended),
                    "the input",
                )
            )
            raise ValueError(
                f"{longer} has more lines than {shorter} (which ends at line "
                f"{number - 1}): give a line for each input line, an empty one "
                "for none."
            )
        yield text, dict(zip(names, values, strict=True))


FILES = {"prefixes": "prefixes", "terms": "constraints"}  # the files' flags


def text_length(item):
    """The sort key of a line, or of a (line, values) item: the line's length."""
    return len(item if isinstance(item, str) else item[0])
