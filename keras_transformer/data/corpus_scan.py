"""One read of your training files: checked, counted, held out and sampled.

`scan_corpus` reads the training files once, as a stream, before anything
else uses them. It raises the one-line error of a bad file, counts the
training pairs, sets aside the pairs a split holds out (by a hash of the
source sentence, `split_pairs`), and keeps a uniform random sample of the
training pairs: the text the vocabulary is trained on and the batches of a
pass are estimated from. Its memory is the held-out pairs and the sample,
whatever the size of the files; the training pairs themselves are streamed
later by `keras_transformer.data.file_stream`.
"""

import collections
import dataclasses

from keras_transformer.data import ding
from keras_transformer.data.parallel_text import CorpusReader
from keras_transformer.data.tokenizer import SAMPLE_SENTENCES, reservoir_sample

SPLIT_SALT = "split_pairs:"
# What each held-out split of your own files gets: 5% of the sources, at most
# about 2,000 pairs' worth.
HELD_OUT_FRACTION = 0.05
HELD_OUT_MAX = 2000
# Training pairs kept as the sample: the vocabulary's sentences.
SAMPLE_PAIRS = SAMPLE_SENTENCES // 2
# A progress line every this many lines of a file.
PROGRESS_LINES = 1_000_000


def held_out_fraction(pairs):
    """The share of sources a held-out split of `pairs` pairs gets.

    5%, or about 2,000 pairs' worth for a corpus of over 40,000 pairs.

    Example:

    >>> held_out_fraction(16_913), held_out_fraction(100_000)
    (0.05, 0.02)
    """
    return min(HELD_OUT_FRACTION, HELD_OUT_MAX / max(pairs, 1))


def split_pairs(pairs, validation_fraction=0.0, test_fraction=0.0):
    """Split pairs deterministically by a stable hash of their source.

    All pairs with the same source (ignoring case, spacing and final
    punctuation) land in the same split, so no validation or test source is
    ever in train. See `keras_transformer.data.ding.assign_split`; the hash
    is salted differently from the Ding corpus's own split, so re-splitting
    Ding's training sentences still gives validation and test sets.

    Args:
        pairs: `(source, target)` strings.
        validation_fraction: the expected share of sources in validation.
        test_fraction: the expected share of sources in test.

    Returns:
        A dict with `"train"` and, when their fraction is above 0,
        `"validation"` and `"test"`, each a list of pairs in input order.

    Example:

    >>> pairs = [(f"Satz {i}.", f"Sentence {i}.") for i in range(1000)]
    >>> {name: len(part) for name, part in split_pairs(pairs, 0.1, 0.1).items()}
    {'train': 812, 'validation': 94, 'test': 94}
    """
    splits = {"train": []}
    if validation_fraction > 0:
        splits["validation"] = []
    if test_fraction > 0:
        splits["test"] = []
    for pair in pairs:
        split = ding.assign_split(
            pair[0], validation_fraction, test_fraction, salt=SPLIT_SALT
        )
        splits[split].append(pair)
    return splits


@dataclasses.dataclass
class CorpusScan:
    """What `scan_corpus` found in the training files.

    `corpora`: the corpora read, `(tsv,)` or `(source, target)`; per corpus,
    `pairs` (training pairs) and `held_out_lines` (the sorted 0-based line
    numbers of the pairs held out); `held_out`: {split: its list of pairs,
    in file order}; `fraction`: the share of sources each held-out split
    got; `dropped`: the pairs left out for an empty side; `sample`: a
    uniform random sample of the training pairs (all of them, in order,
    when they are few enough).
    """

    corpora: list
    pairs: list
    held_out_lines: list
    held_out: dict
    fractions: dict
    dropped: int
    sample: list

    @property
    def training_pairs(self):
        return sum(self.pairs)

    @property
    def pairs_read(self):
        """Training and held-out pairs."""
        return self.training_pairs + sum(map(len, self.held_out.values()))

    @property
    def sampled(self):
        """Whether `sample` is a sample and not all the training pairs."""
        return len(self.sample) < self.training_pairs


def scan_corpus(
    corpora,
    fractions=None,
    columns=(0, 1),
    sample_size=SAMPLE_PAIRS,
    seed=0,
    log=None,
):
    """Reads `corpora` once: checks them, holds out splits, samples training.

    Args:
        corpora: the corpora, `(tsv,)` or `(source, target)` each (see
            `parallel_text.corpus_files`).
        fractions: {split: the share of the sources it holds out, or None
            for `held_out_fraction` of the pairs read}, of the splits
            "validation" and "test" to hold out (none by default).
        columns: for TSV files, the source and target columns.
        sample_size: the most training pairs kept as the sample (0: none).
        seed: the seed of the sample.
        log: called with a progress line every `PROGRESS_LINES` lines.

    Returns:
        A `CorpusScan`.

    Raises:
        ValueError: a malformed line, files of different lengths or text
            that is not UTF-8, named with its file (and line).
    """
    scan = CorpusScan(
        corpora=[tuple(files) for files in corpora],
        pairs=[0] * len(corpora),
        held_out_lines=[[] for _ in corpora],
        held_out={name: [] for name in fractions or {}},
        fractions={},
        dropped=0,
        sample=[],
    )
    splits = _HeldOut(fractions or {})
    pairs = _training_pairs(scan, splits, columns, log)
    if sample_size:
        scan.sample = reservoir_sample(pairs, sample_size, seed)[0]
    else:
        collections.deque(pairs, maxlen=0)  # read to the end
    return scan


def _training_pairs(scan, splits, columns, log):
    """Yields the training pairs of `scan.corpora` (some out of order), and
    fills in `scan`'s counts and held-out pairs once read to the end."""
    read = [0] * len(scan.corpora)
    for index, files in enumerate(scan.corpora):
        reader = CorpusReader(files, columns)
        for number, source, target in reader:
            read[index] += 1
            if log and number and number % PROGRESS_LINES == 0:
                log(f"Reading {' '.join(files)}: {number:,} lines...")
            if splits.may_hold(source):
                splits.candidates.append(
                    (splits.position, index, number, source, target)
                )
                yield from splits.prune()
            else:
                yield source, target
        scan.dropped += reader.dropped
    scan.fractions = splits.shares()
    for position, index, number, source, target in splits.candidates:
        split = splits.split_of(position)
        if split == "train":
            yield source, target
        else:
            scan.held_out[split].append((source, target))
            scan.held_out_lines[index].append(number)
    scan.pairs = [
        count - len(lines)
        for count, lines in zip(read, scan.held_out_lines, strict=True)
    ]


class _HeldOut:
    """The pairs that may be held out, found in one read.

    A split's share by default, `held_out_fraction` of all the pairs, is
    known only at the end, but it only shrinks as pairs are read: a pair
    whose hash falls beyond the shares of the pairs read so far is
    training, and only the others are kept (about twice `HELD_OUT_MAX` a
    split).
    """

    def __init__(self, fractions):
        self.fractions = dict(fractions)  # {split: share, or None for the rule}
        self.candidates, self.position = [], 0.0
        self.pairs_read = 0
        self.limit = 1024

    def shares(self):
        """{split: the most its share can be, from the pairs read}."""
        rule = held_out_fraction(self.pairs_read)
        return {
            name: rule if fraction is None else fraction
            for name, fraction in self.fractions.items()
        }

    def may_hold(self, source):
        self.pairs_read += 1
        if not self.fractions:
            return False
        self.position = ding.split_position(source, SPLIT_SALT)
        return self.position < sum(self.shares().values())

    def prune(self):
        """Yields the candidates that can no longer be held out, and drops them."""
        if len(self.candidates) < self.limit:
            return
        width = sum(self.shares().values())
        kept = []
        for candidate in self.candidates:
            if candidate[0] < width:
                kept.append(candidate)
            else:
                yield candidate[3:]
        self.candidates = kept
        self.limit = max(2 * len(kept), 1024)

    def split_of(self, position):
        shares = self.shares()
        return ding.split_at(
            position, shares.get("validation", 0.0), shares.get("test", 0.0)
        )
