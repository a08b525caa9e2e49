"""Word alignments as text (the Pharaoh format) and their error rate.

The Pharaoh format, which Moses, fast_align, eflomal, Marian and fairseq
write: a line per sentence pair of space-separated `i-j` links, source
word i to target word j, both counted from 0 among the words between
spaces. Gold sets mark links a human is sure of as `i-j` and those that
are possible as `ipj`.
"""


def format_pharaoh(links):
    """Links as a Pharaoh line, by source word, then target word.

    Args:
        links: (i, j) pairs, source word i linked to target word j: a set
            as `parse_pharaoh` gives, or `np.argwhere` of a row of
            `links.word_links`.

    Example:

    >>> format_pharaoh({(1, 1), (0, 1), (1, 0)})
    '0-1 1-0 1-1'
    >>> format_pharaoh(np.argwhere([[False, True], [True, False]]))
    '0-1 1-0'
    """
    return " ".join(f"{i}-{j}" for i, j in sorted(map(tuple, links)))


def parse_pharaoh(line, first_index=0):
    """The links of a Pharaoh line: `(sure, possible)`, sets of (i, j).

    Links written `i-j` are sure, `ipj` possible; both sets count words
    from 0.

    Args:
        line: e.g. "0-0 1p2".
        first_index: the index the line gives the first word (1 for gold
            sets that count from 1, as the Hansards set does).

    Raises:
        ValueError: a link is not `i-j` or `ipj` with i and j >= first_index.

    Example:

    >>> parse_pharaoh("1-1 2p3", first_index=1)
    ({(0, 0)}, {(1, 2)})
    >>> parse_pharaoh("0-x")
    Traceback (most recent call last):
    ...
    ValueError: Not a word link 'i-j' or 'ipj' (counting from 0): '0-x'.
    """
    sure, possible = set(), set()
    for link in line.split():
        kind = possible if "p" in link else sure
        parts = link.split("p" if kind is possible else "-")
        if len(parts) != 2 or not all(part.isdigit() for part in parts):
            raise ValueError(_bad_link(link, first_index))
        i, j = (int(part) - first_index for part in parts)
        if min(i, j) < 0:
            raise ValueError(_bad_link(link, first_index))
        kind.add((i, j))
    return sure, possible


def _bad_link(link, first_index):
    return f"Not a word link 'i-j' or 'ipj' (counting from {first_index}): {link!r}."


def alignment_error_rate(predicted, sure, possible):
    """The alignment error rate of a corpus (Och & Ney, 2003), from 0 (best) to 1.

    `1 - (|A & S| + |A & P|) / (|A| + |S|)`, with A the predicted links, S
    the sure and P the possible gold links (the sure ones included),
    counted over all sentences.

    Args:
        predicted: a set of (i, j) links per sentence.
        sure: the gold set's sure links, a set per sentence, as
            `parse_pharaoh` gives them.
        possible: its possible links, a set per sentence; the sure links
            count as possible too.

    Raises:
        ValueError: the three have different numbers of sentences, or the
            gold set has no sure links and nothing is predicted.

    Example:

    >>> alignment_error_rate([{(0, 0), (1, 2)}], [{(0, 0)}], [{(1, 1)}])
    0.33333333333333337
    """
    if not len(predicted) == len(sure) == len(possible):
        raise ValueError(
            f"{len(predicted)} predicted, {len(sure)} sure and {len(possible)} "
            "possible alignments: one of each per sentence."
        )
    hits_sure = hits_possible = size_predicted = size_sure = 0
    for links, gold_sure, gold_possible in zip(predicted, sure, possible, strict=True):
        links = set(links)
        hits_sure += len(links & gold_sure)
        hits_possible += len(links & (gold_sure | gold_possible))
        size_predicted += len(links)
        size_sure += len(gold_sure)
    if size_predicted + size_sure == 0:
        raise ValueError("No links predicted and no sure gold links: AER undefined.")
    return 1 - (hits_sure + hits_possible) / (size_predicted + size_sure)
