"""Reading parallel text files line by line, checked, in pure Python.

The rules here are the ones the `tf.data` stream of the same files follows
(`keras_transformer.data.file_stream`), so a file that passes this reader
streams the same pairs:

- lines end at `\\n` only (a `\\r` before it is dropped), as in
  `tf.data.TextLineDataset`; a byte-order mark at the start of a line is
  dropped;
- spacing is normalised (`normalise`): runs of whitespace, Unicode's
  included, become one space, and the ends are stripped;
- a TSV corpus skips blank lines; a two-file corpus drops (and counts) the
  pairs with an empty side.
"""

import glob
import itertools
import os

# A glob pattern in a file name (`train-*.tsv`) stands for the files it matches.
GLOB_CHARACTERS = frozenset("*?[")


def normalise(text):
    """`text` with each run of whitespace one space, and no space at the ends.

    Example:

    >>> normalise("  Guten\\u00a0 Morgen.\\t")
    'Guten Morgen.'
    """
    return " ".join(text.split())


def numbered_lines(path):
    """`(0-based number, line)` for each line of the UTF-8 file `path`.

    Read as a stream: lines end at `\\n`, and a `\\r` before it and a
    byte-order mark at a line's start are dropped.

    Raises:
        ValueError: a line is not UTF-8; the message names the file and the
            line, and says how to convert it.
    """
    with open(path, "rb") as file:
        for number, raw in enumerate(file):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(
                    f"{os.fspath(path)!r} is not UTF-8 text (line {number + 1}, "
                    f"{error.reason}: {error.object[error.start : error.end]!r}); "
                    "convert it first, e.g. with `iconv -f latin1 -t utf-8`."
                ) from error
            line = line.removesuffix("\n").removesuffix("\r")
            yield number, line.removeprefix("\ufeff")


def count_lines(path):
    """The number of lines of `path`, as `numbered_lines` numbers them."""
    with open(path, "rb") as file:
        return sum(1 for _ in file)


def check_file(path, what):
    """Raises `FileNotFoundError` (saying `what` it is) unless `path` is a file."""
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"The {what} {os.fspath(path)!r} does not exist; pass the path of a "
            "UTF-8 text file."
        )


def _matches(pattern, what):
    """The files of a name or glob pattern, sorted; a one-line error if none."""
    pattern = os.fspath(pattern)
    if GLOB_CHARACTERS.isdisjoint(pattern):
        check_file(pattern, what)
        return [pattern]
    paths = sorted(path for path in glob.glob(pattern) if os.path.isfile(path))
    if not paths:
        raise FileNotFoundError(f"No {what} matches {pattern!r}.")
    return paths


def corpus_files(files):
    """The corpora that `files` name: a list of `(tsv,)` or `(source, target)`.

    `files` is `(TSV,)` or `(SOURCE, TARGET)`, where each may be a glob
    pattern: `("train-*.tsv",)` is every matching TSV file, and
    `("train.*.de", "train.*.en")` pairs the matching files in sorted order.

    Raises:
        FileNotFoundError: a file is missing, or a pattern matches none.
        ValueError: source and target patterns match different numbers of
            files.
    """
    if len(files) == 1:
        return [(path,) for path in _matches(files[0], "TSV file")]
    sources = _matches(files[0], "source file")
    targets = _matches(files[1], "target file")
    if len(sources) != len(targets):
        raise ValueError(
            f"{files[0]!r} matches {len(sources)} files but {files[1]!r} matches "
            f"{len(targets)}; source and target files pair up in sorted order."
        )
    return list(zip(sources, targets, strict=True))


class CorpusReader:
    """Reads one corpus, `(tsv,)` or `(source, target)`, as numbered pairs.

    `dropped` counts, once read, the pairs of two files that had an empty
    side and were left out.
    """

    def __init__(self, files, columns=(0, 1)):
        self.files = tuple(os.fspath(path) for path in files)
        self.columns = columns
        self.dropped = 0

    def __iter__(self):
        """`(0-based line number, source, target)` of each pair, in file order.

        Raises:
            ValueError: a malformed TSV line (its number is given), files
                of different lengths, or text that is not UTF-8.
        """
        if len(self.files) == 1:
            return self._tsv_pairs()
        return self._file_pairs()

    def _tsv_pairs(self):
        (path,) = self.files
        source_column, target_column = self.columns
        needed = max(source_column, target_column) + 1
        for number, line in numbered_lines(path):
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) < needed:
                raise ValueError(
                    f"{path!r} line {number + 1}: expected at least {needed} "
                    f"tab-separated columns, got {len(fields)}: {line[:80]!r}"
                )
            source = normalise(fields[source_column])
            target = normalise(fields[target_column])
            if not (source and target):
                raise ValueError(
                    f"{path!r} line {number + 1}: empty source or target: {line[:80]!r}"
                )
            yield number, source, target

    def _file_pairs(self):
        source_path, target_path = self.files
        sources, targets = numbered_lines(source_path), numbered_lines(target_path)
        lines = 0
        for source_line, target_line in itertools.zip_longest(sources, targets):
            if source_line is None or target_line is None:
                rest = 1 + sum(1 for _ in sources) + sum(1 for _ in targets)
                counts = (
                    (lines, lines + rest)
                    if source_line is None
                    else (
                        lines + rest,
                        lines,
                    )
                )
                raise ValueError(
                    f"{source_path!r} has {counts[0]} lines but {target_path!r} "
                    f"has {counts[1]}; parallel files need one line per sentence "
                    "on both sides."
                )
            lines += 1
            (number, source), (_, target) = source_line, target_line
            source, target = normalise(source), normalise(target)
            if source and target:
                yield number, source, target
            else:
                self.dropped += 1


def read_parallel_files(source_path, target_path):
    """The sentence pairs of two aligned files, one sentence per line.

    Line i of one file translates line i of the other. Spacing is
    normalised; a pair with an empty line on either side is dropped.

    Returns:
        A list of `(source, target)` strings, in file order.

    Raises:
        FileNotFoundError: a file is missing.
        ValueError: the files have different numbers of lines (both named),
            or one is not UTF-8 (its line is named).
    """
    check_file(source_path, "source file")
    check_file(target_path, "target file")
    reader = CorpusReader((source_path, target_path))
    return [(source, target) for _, source, target in reader]


def read_tsv(path, columns=(0, 1)):
    """The sentence pairs of a tab-separated file, one pair per line.

    Blank lines are skipped. Extra columns are allowed (for example the
    attribution column of Tatoeba exports); `columns` picks the two to use.

    Args:
        path: the file (UTF-8), `source<TAB>target` per line by default.
        columns: the 0-based columns of the source and the target.

    Returns:
        A list of `(source, target)` strings with normalised spacing.

    Raises:
        FileNotFoundError: the file is missing.
        ValueError: a line has too few columns or an empty source or target;
            the message gives its 1-based line number.
    """
    check_file(path, "TSV file")
    return [(source, target) for _, source, target in CorpusReader((path,), columns)]


def read_pairs(path, target_path=None, columns=(0, 1)):
    """The sentence pairs of two aligned files, or of one TSV file, as a list.

    Args:
        path: the source file (one sentence per line), or the TSV file.
        target_path: the target file; None reads `path` as TSV.
        columns: for a TSV file, the source and target columns.

    Returns:
        A list of `(source, target)` strings: see `read_parallel_files` and
        `read_tsv`.
    """
    if target_path is None:
        return read_tsv(path, columns)
    return read_parallel_files(path, target_path)
