"""n-best lists, sampling and forced-decoding scores of an export, line by line.

`translate --n-best K` writes `index<TAB>score<TAB>hypothesis` lines, K per
input line (index: the 0-based input line number), best first, as Marian
and fairseq do; `translate --sampling` writes one drawn translation per
line; `score` writes `sum<TAB>per_token` log-probabilities per pair. Both
kinds of export answer: a SavedModel through its `nbest`, `sample`
(keras-hub's samplers) and `score` signatures, a CTranslate2 model through
`num_hypotheses`, `return_scores`, `sampling_topk`/`sampling_topp` and
`score_batch`.
"""

import itertools
import random

import tensorflow as tf

from keras_transformer.decoding_defaults import decoding_settings
from keras_transformer.export.ctranslate2_model import is_ctranslate2_export
from keras_transformer.export.ctranslate2_translator import CTranslate2Translator
from keras_transformer.export.streaming import (
    SORT_WINDOW,
    decoded_lines,
    load_export,
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
):
    """A function of a list of str -> per text, `n_best` (score, translation).

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

    Raises:
        ValueError: `n_best` < 1 or > `beam_size`, or an export without the
            `nbest` or `sample` signature it needs.
    """
    if n_best < 1:
        raise ValueError(f"n_best must be >= 1, got {n_best}.")
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}.")
    if seed is None:
        seed = random.randrange(2**31)
    if is_ctranslate2_export(path):
        translator = CTranslate2Translator(path)
        if sampling is not None:
            import ctranslate2

            ctranslate2.set_random_seed(seed)
        if sampling is None and beam_size is None:
            beam_size = max(translator.beam_size, n_best)
        _check_n_best(n_best, beam_size, sampling)
        return lambda texts: translator.hypotheses(
            texts, n_best, beam_size, alpha, sampling, temperature
        )
    export = load_export(path)
    if sampling is not None:
        return _samples_function(export, path, n_best, sampling, temperature, seed)
    if "nbest" not in export.signatures:
        raise ValueError(f"{path} has no nbest signature; export the model again.")
    saved = {name: value.numpy() for name, value in export.defaults.items()}
    if beam_size is None:
        beam_size = max(int(saved["beam_size"]), n_best)
    beam_size, alpha = decoding_settings(beam_size, alpha, saved)
    _check_n_best(n_best, beam_size, None)
    run = export.signatures["nbest"]

    def nbest(texts):
        outputs = run(
            text=tf.constant(texts, tf.string),
            beam_size=tf.constant(beam_size),
            alpha=tf.constant(alpha),
        )
        return [
            [
                (float(score), text.decode("utf-8"))
                for score, text in zip(scores[:n_best], translations, strict=False)
            ]
            for scores, translations in zip(
                outputs["scores"].numpy(), outputs["translations"].numpy(), strict=True
            )
        ]

    return nbest


def _samples_function(export, path, n_best, sampling, temperature, seed):
    """`n_best` draws per text from a SavedModel's `sample` signature."""
    if "sample" not in export.signatures:
        raise ValueError(f"{path} has no sample signature; export the model again.")
    run = export.signatures["sample"]
    kind, value = sampling
    settings = {
        "top_k": tf.constant(value if kind == "topk" else 0),
        "top_p": tf.constant(float(value) if kind == "topp" else 1.0),
        "temperature": tf.constant(float(temperature)),
    }
    calls = itertools.count()

    def samples(texts):
        # Each text n_best times in one batch: every row draws on its own.
        repeated = [text for text in texts for _ in range(n_best)]
        outputs = run(
            text=tf.constant(repeated, tf.string),
            seed=tf.constant((seed + next(calls)) % 2**31),
            **settings,
        )
        drawn = list(
            zip(
                outputs["score"].numpy().tolist(),
                (text.decode("utf-8") for text in outputs["translation"].numpy()),
                strict=True,
            )
        )
        return [drawn[i : i + n_best] for i in range(0, len(drawn), n_best)]

    return samples


def _check_n_best(n_best, beam_size, sampling):
    if sampling is None and n_best > beam_size:
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

    Example:

    >>> import io
    >>> output = io.StringIO()
    >>> write_hypotheses(lambda texts: [[(-0.5, t.upper()), (-2.0, t)] for t in texts],
    ...                  [b"a", b"b"], output)
    >>> output.getvalue().splitlines()
    ['0\\t-0.500000\\tA', '0\\t-2.000000\\ta', '1\\t-0.500000\\tB', '1\\t-2.000000\\tb']
    """
    index = itertools.count()
    batches = translate_batches(
        hypotheses, decoded_lines(lines), batch_size, total, window=window
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


def score_function(path):
    """A function of (sources, targets), lists of str -> per pair (sum, tokens).

    `sum` is the log-probability of the target given the source by forced
    decoding (`Translator.score`, CTranslate2's `score_batch`), `tokens`
    its pieces + 1 (the end id).
    """
    if is_ctranslate2_export(path):
        return CTranslate2Translator(path).score
    export = load_export(path)
    if "score" not in export.signatures:
        raise ValueError(f"{path} has no score signature; export the model again.")
    run = export.signatures["score"]

    def score(sources, targets):
        outputs = run(
            source=tf.constant(sources, tf.string),
            target=tf.constant(targets, tf.string),
        )
        return list(
            zip(
                outputs["score"].numpy().tolist(),
                outputs["tokens"].numpy().tolist(),
                strict=True,
            )
        )

    return score


def score_lines(path, sources, targets, output, batch_size=32, total=None):
    """Writes `sum<TAB>per_token` for each pair of lines (bytes) into `output`.

    `per_token` is `sum` over the target's tokens, end id included.

    Raises:
        ValueError: `sources` and `targets` have different numbers of lines.
    """
    score = score_function(path)
    pairs = itertools.zip_longest(decoded_lines(sources), decoded_lines(targets))

    def score_pairs(batch):
        if any(None in pair for pair in batch):
            raise ValueError("SOURCES and TARGETS have different numbers of lines.")
        return score(*(list(side) for side in zip(*batch, strict=True)))

    def length(pair):  # a missing line (None) is caught by score_pairs
        return sum(len(side or "") for side in pair)

    for window in translate_batches(score_pairs, pairs, batch_size, total, key=length):
        output.write(
            "".join(f"{sum_:.6f}\t{sum_ / tokens:.6f}\n" for sum_, tokens in window)
        )
        output.flush()
