"""n-best lists, sampling and forced-decoding scores of an export, line by line.

`translate --n-best K` writes `index<TAB>score<TAB>hypothesis` lines, K per
input line (index: the 0-based input line number), best first, as Marian
and fairseq do; `translate --sampling` writes one drawn translation per
line; `score` writes `sum<TAB>per_token` log-probabilities per pair, and
`align` a Pharaoh line of word alignments per pair. Both
kinds of export answer: a SavedModel through its `nbest`, `sample`
(keras-hub's samplers) and `score` signatures, a CTranslate2 model through
`num_hypotheses`, `return_scores`, `sampling_topk`/`sampling_topp`,
`score_batch` and `return_attention`.
"""

import itertools
import random

from keras_transformer.export.engines import open_export
from keras_transformer.export.line_inputs import (
    decoded_lines,
    text_length,
    with_line_files,
)
from keras_transformer.export.streaming import (
    SORT_WINDOW,
    glossary_terms,
    report_cut_prefixes,
    translate_batches,
)

SAMPLING_FORMS = "topk:K (an int K >= 1) or topp:P (0 < P <= 1)"


def parse_sampling(text):
    """("topk", K) or ("topp", P) of a text "topk:K" or "topp:P".

    Example:

    >>> parse_sampling("topk:5"), parse_sampling("topp:0.9")
    (('topk', 5), ('topp', 0.9))
    """
    kind, _, value = text.partition(":")
    try:
        number = int(value) if kind == "topk" else float(value)
    except ValueError:
        number = None
    valid = {
        "topk": lambda k: k is not None and k >= 1,
        "topp": lambda p: p is not None and 0 < p <= 1,
    }
    if kind not in valid or not valid[kind](number):
        raise ValueError(f"sampling takes {SAMPLING_FORMS}, got {text!r}.")
    return kind, number


def hypotheses_function(
    path,
    n_best=1,
    beam_size=None,
    alpha=None,
    sampling=None,
    temperature=1.0,
    seed=None,
    controls=None,
    glossary=None,
):
    """A function of a list of str (and, by position, a typed prefix per
    text) -> per text, `n_best` (score, translation).

    Args:
        path: a SavedModel's version folder or a CTranslate2 model folder.
        n_best: hypotheses per text, best first.
        beam_size: beams; by default the export's, or `n_best` if larger.
        alpha: the length-penalty exponent; by default the export's.
        sampling: None, or ("topk", K) or ("topp", P) (`parse_sampling`):
            draw instead of searching, `n_best` draws per text, in drawing
            order: a SavedModel's `sample` signature (keras-hub's samplers),
            CTranslate2's `sampling_topk`/`sampling_topp`.
        temperature: logits are divided by it before sampling.
        seed: the draws' seed (int); None draws one. The same seed, export
            and input give the same draws.
        controls: None, or a `ControlSettings` for every text.
        glossary: None, or a `glossary.Glossary`: each text's hypotheses
            use the target terms of the source terms it contains (a
            required term with `sampling` is a ValueError: a draw cannot
            place one).

    Raises:
        ValueError: `n_best` < 1 or > `beam_size`, or an export without the
            `nbest` or `sample` signature it needs.
    """
    if n_best < 1:
        raise ValueError(f"n_best must be >= 1, got {n_best}.")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}.")
    engine = open_export(path)
    if sampling is not None:
        engine.set_seed(random.randrange(2**31) if seed is None else seed)
    elif beam_size is None and engine.beam_size is not None:
        beam_size = max(engine.beam_size, n_best)
    _check_n_best(n_best, beam_size, sampling)

    def hypotheses(texts, prefixes=None, terms=None):
        terms = glossary_terms(glossary, texts, terms)
        return engine.hypotheses(
            texts,
            n_best,
            beam_size,
            alpha,
            sampling,
            temperature,
            prefixes=prefixes,
            controls=controls,
            terms=terms,
        )

    hypotheses.engine = engine
    return hypotheses


def _check_n_best(n_best, beam_size, sampling):
    if sampling is None and beam_size is not None and n_best > beam_size:
        raise ValueError(
            f"n_best {n_best} needs beam_size >= {n_best}, got {beam_size}."
        )


def write_hypotheses(
    hypotheses,
    lines,
    output,
    batch_size=32,
    total=None,
    n_best=True,
    window=SORT_WINDOW,
    prefixes=None,
    constraints=None,
):
    """Writes the hypotheses of `lines` (bytes) into `output`, in input order,
    a window at a time (`translate_batches`).

    Args:
        hypotheses: from `hypotheses_function`.
        lines: an iterable of bytes, e.g. a file opened in binary mode.
        output: a text stream.
        batch_size: lines per call.
        total: the number of lines, for the progress bar.
        n_best: write `index<TAB>score<TAB>hypothesis` lines; if False, the
            first hypothesis of each line alone (as `translate` writes).
        window: lines read ahead and sorted by length, see
            `translate_batches`.
        prefixes: None, or line-aligned bytes, a typed prefix per line
            (`hypotheses` then takes them as `prefixes`).
        constraints: None, or line-aligned bytes, a line of phrases per
            line (`hypotheses` then takes their `Terms` as `terms`).

    Example:

    >>> import io
    >>> output = io.StringIO()
    >>> write_hypotheses(lambda texts: [[(-0.5, t.upper()), (-2.0, t)] for t in texts],
    ...                  [b"a", b"b"], output)
    >>> output.getvalue().splitlines()
    ['0\\t-0.500000\\tA', '0\\t-2.000000\\ta', '1\\t-0.500000\\tB', '1\\t-2.000000\\tb']
    """
    index = itertools.count()
    run, texts = with_line_files(
        hypotheses, decoded_lines(lines), prefixes, constraints
    )
    batches = translate_batches(
        run, texts, batch_size, total, window=window, key=text_length
    )
    for ahead in batches:
        for results in ahead:
            number = next(index)
            if not n_best:
                output.write(results[0][1] + "\n")
                continue
            for score, text in results:
                output.write(f"{number}\t{score:.6f}\t{text}\n")
        output.flush()
    if hasattr(hypotheses, "engine"):
        report_cut_prefixes(hypotheses.engine)


def score_function(path):
    """A function of (sources, targets), lists of str -> per pair (sum, tokens).

    `sum` is the log-probability of the target given the source by forced
    decoding (`Translator.score`, CTranslate2's `score_batch`), `tokens`
    its pieces + 1 (the end id).
    """
    return open_export(path).score


def score_lines(path, sources, targets, output, batch_size=32, total=None):
    """Writes `sum<TAB>per_token` for each pair of lines (bytes) into `output`.

    `per_token` is `sum` over the target's tokens, end id included.

    Raises:
        ValueError: `sources` and `targets` have different numbers of lines.
    """
    write_pairs(
        score_function(path),
        lambda result: f"{result[0]:.6f}\t{result[0] / result[1]:.6f}",
        sources,
        targets,
        output,
        batch_size,
        total,
    )


def align_lines(path, sources, targets, output, batch_size=32, total=None):
    """Writes each pair of lines' (bytes) word alignment as a Pharaoh line
    into `output`: a SavedModel's `align` signature, or a CTranslate2
    export's attention (`CTranslate2Translator.align`).

    Raises:
        ValueError: `sources` and `targets` have different numbers of lines,
            or a SavedModel was exported before alignments (it has no
            `align` signature).
    """
    write_pairs(
        open_export(path).align, str, sources, targets, output, batch_size, total
    )


def write_pairs(function, line, sources, targets, output, batch_size, total):
    """Writes `line(result)` for each pair of lines of `sources` and
    `targets` (bytes), in order, `function` called on batches of pairs
    (lists of sources and targets) as they are read.

    Raises:
        ValueError: `sources` and `targets` have different numbers of lines.
    """
    pairs = itertools.zip_longest(decoded_lines(sources), decoded_lines(targets))

    def run(batch):
        if any(None in pair for pair in batch):
            raise ValueError("SOURCES and TARGETS have different numbers of lines.")
        return function(*(list(side) for side in zip(*batch, strict=True)))

    def length(pair):  # a missing line (None) is caught by run
        return sum(len(side or "") for side in pair)

    for window in translate_batches(run, pairs, batch_size, total, key=length):
        output.write("".join(line(result) + "\n" for result in window))
        output.flush()
