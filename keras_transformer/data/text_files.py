"""Reading a UTF-8 text file as lines, for the Ding dictionary and your corpora."""

import os


def read_lines(path):
    """The lines of a UTF-8 file, split at line ends (\\n, \\r\\n or \\r) only.

    `str.splitlines` would also split at the separators Unicode allows
    inside text (U+2028, U+0085, form feed, ...), which some corpora
    contain, and shift every later line of one side of a parallel corpus.
    A byte-order mark at the start of the file is dropped.

    Args:
        path: the file.

    Returns:
        A list of the lines, without their line ends.

    Raises:
        ValueError: the file is not UTF-8; the message names it and says
            how to convert it.
    """
    try:
        with open(path, encoding="utf-8-sig") as file:
            return [line.rstrip("\n") for line in file]
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{os.fspath(path)!r} is not UTF-8 text ({error.reason}: "
            f"{error.object[error.start : error.end]!r}); convert it first, "
            "e.g. with `iconv -f latin1 -t utf-8`."
        ) from error
