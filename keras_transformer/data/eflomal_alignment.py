"""Word alignments of a corpus by eflomal, for guided alignment training.

eflomal (Östling and Tiedemann, 2016; pip `eflomal`) is a fast Bayesian
word aligner. `align_corpus` gives it the pairs of a corpus as they are
read for training (`parallel_text.CorpusReader`: normalised, words
between spaces, the pairs with an empty side left out), streamed from
the files, aligns them both ways, and writes the links both directions
agree on (the intersection, the most precise of the usual
symmetrisations: benchmarks/README.md, "Word alignments") as a Pharaoh
line per line of the corpus.

Memory: eflomal holds the corpus as 32-bit word ids, in C, with a few
arrays of the same size for its samplers, and Python holds a dict of the
vocabulary while the text is converted; the time grows in step with the
corpus (benchmarks/README.md gives both).
"""

import array
import importlib.util
import os
import tempfile

from keras_transformer.alignment.pharaoh import format_pharaoh, parse_pharaoh
from keras_transformer.data.parallel_text import CorpusReader, count_lines


def align_corpus(files, path, columns=(0, 1)):
    """Aligns the corpus `files` with eflomal: a Pharaoh line per corpus line.

    Args:
        files: the corpus, `(source, target)` or `(tsv,)`.
        path: the file to write, as `data.alignment_targets` reads it: the
            links of line n's pair on line n, an empty line where the
            corpus has no pair.
        columns: for a TSV file, the source and target columns.

    Returns:
        The number of links written.

    Raises:
        ImportError: eflomal is not installed (`check_eflomal`).
    """
    check_eflomal()
    import eflomal

    numbers = array.array("q")  # the corpus line of each pair, from the sources

    def sources():
        for number, source, _ in CorpusReader(files, columns):
            numbers.append(number)
            yield source + "\n"

    targets = (target + "\n" for _, _, target in CorpusReader(files, columns))
    with tempfile.TemporaryDirectory() as folder:
        forward, reverse = (os.path.join(folder, name) for name in ("fwd", "rev"))
        eflomal.Aligner().align(
            sources(), targets, links_filename_fwd=forward, links_filename_rev=reverse
        )
        links = 0
        with (
            open(forward, encoding="utf-8") as forward_lines,
            open(reverse, encoding="utf-8") as reverse_lines,
            open(path, "w", encoding="utf-8") as output,
        ):
            written = 0
            for number, one_way, other_way in zip(
                numbers, forward_lines, reverse_lines, strict=True
            ):
                output.write("\n" * (number - written))  # lines without a pair
                agreed = parse_pharaoh(one_way)[0] & parse_pharaoh(other_way)[0]
                output.write(format_pharaoh(sorted(agreed)) + "\n")
                links += len(agreed)
                written = number + 1
            output.write("\n" * (count_lines(files[0]) - written))
    return links


def check_eflomal():
    """Raises an ImportError that says how to install eflomal, if it is not."""
    if importlib.util.find_spec("eflomal") is None:
        raise ImportError(
            "Aligning the training pairs needs eflomal: pip install "
            '"keras-transformer[align]" (or pip install eflomal).'
        )
