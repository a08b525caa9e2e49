"""Translating a stream of lines with an export, batch by batch.

Both kinds of export translate: a SavedModel (`export_translator`) and a
CTranslate2 model (`export_ctranslate2`), through the one interface of
`export.engines`.
"""

import itertools
import sys

import tensorflow as tf

from keras_transformer.export.engines import open_export
from keras_transformer.export.line_inputs import (
    decoded_lines,
    text_length,
    with_line_files,
)
from keras_transformer.export.long_inputs import LongInputs, check_policy
from keras_transformer.export.markup_lines import MarkupTranslation


def translation_function(
    path,
    signature="serving_default",
    beam_size=None,
    alpha=None,
    threads=None,
    controls=None,
    glossary=None,
):
    """A function of a list of str (and, by keyword, a prefix per text) that
    returns their translations.

    A source longer than the model's limit is cut there, as the export
    does; `long_inputs_function` splits it instead.

    Args:
        path: an export: a SavedModel's version folder (`export_translator`)
            or a CTranslate2 model folder (`export_ctranslate2`).
        signature: "serving_default" (beam search with the export's settings)
            or "greedy".
        beam_size, alpha: beam search with these instead; one left None
            takes the export's value.
        threads: CPU threads of the engine (`engines.set_threads`); None
            leaves the engine's default (all cores).
        controls: None, or a `ControlSettings` for every text.
        glossary: None, or a `glossary.Glossary`: each text's translation
            uses the target terms of the source terms it contains.

    Returns:
        A function `translate(texts, prefixes=None, terms=None)` of a list
        of str (B,) (and of a typed prefix and a `Terms` per text, joined
        with the glossary's) -> a list of str (B,). Its
        attribute `engine` is the export's engine (`engines.open_export`).
    """
    engine = open_export(path, threads)
    return _engine_function(engine, signature, beam_size, alpha, controls, glossary)


def long_inputs_function(
    path,
    policy="split",
    batch_size=32,
    max_input_length=None,
    signature="serving_default",
    beam_size=None,
    alpha=None,
    threads=None,
    controls=None,
    glossary=None,
    aligned=False,
):
    """`translation_function` that splits (or cuts and counts) long sources.

    Args:
        path, signature, beam_size, alpha, threads, controls, glossary:
            see `translation_function` (a split source's parts each use
            the terms of what they contain).
        policy: "split" or "truncate" (cut, and counted), see `LongInputs`.
        batch_size: the most texts per engine call.
        max_input_length: with "split", split longer sources than this many
            pieces (at most, and by default, the model's limit).
        aligned: return each translation with its word alignment, a
            Pharaoh line (the engine's `align`).

    Returns:
        A `LongInputs`: a function of a list of str (B,) (and of a prefix
        per text) -> a list of str (B,), or with `aligned` of
        (translation, alignment) pairs, whose `summary()` counts the long
        lines.
    """
    check_policy(policy)
    translate = translation_function(
        path, signature, beam_size, alpha, threads, controls, glossary
    )
    engine = translate.engine
    tokenizer, limit = engine.source_limit()
    return LongInputs(
        translate,
        tokenizer,
        limit,
        policy,
        batch_size,
        max_input_length,
        align=engine.align if aligned else None,
    )


def _engine_function(engine, signature, beam_size, alpha, controls, glossary):
    """`translation_function` of an opened engine."""
    if signature not in ("serving_default", "greedy"):
        raise ValueError(
            f"signature must be serving_default or greedy, got {signature!r}."
        )
    if signature == "greedy":
        if (beam_size, alpha) != (None, None):
            raise ValueError(
                "beam_size and alpha go with the serving_default signature (beam "
                "search), not 'greedy'."
            )
        beam_size, alpha = 1, 0.0
    if beam_size is not None and beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}.")

    def translate(texts, prefixes=None, terms=None):
        terms = glossary_terms(glossary, texts, terms)
        return engine.translate(texts, beam_size, alpha, prefixes, controls, terms)

    translate.engine = engine
    return translate


def glossary_terms(glossary, texts, terms=None):
    """`terms` (a `Terms` per text, or None) joined with those `glossary`
    (or None) finds in `texts`."""
    if glossary is None:
        return terms
    found = [glossary.terms(text) for text in texts]
    if terms is None:
        return found
    return [a | b for a, b in zip(found, terms, strict=True)]


def signature_texts(signature):
    """A function of a list of str -> their translations, of a `Translator`
    signature (or any function of a string tensor (B,) to
    `{"translation": ...}`)."""
    return lambda texts: [
        text.decode("utf-8")
        for text in signature(tf.constant(texts, tf.string))["translation"].numpy()
    ]


SORT_WINDOW = 1000  # texts read ahead and sorted by length before batching


def translate_batches(
    translate,
    texts,
    batch_size=32,
    total=None,
    description=None,
    window=SORT_WINDOW,
    key=len,
):
    """Translates `texts` in batches of similar length; yields the
    translations of each window of texts, in input order.

    The one batching loop of the package: the job's test and validation
    decoding, `evaluate`, `translate`, `score` and the n-best paths go
    through it. It reads `window` texts ahead, sorts them by `key` (stable,
    so equal keys keep their order), translates them `batch_size` at a
    time, and yields their translations in input order before it reads the
    next window: a batch decodes until its longest text is done, so texts
    of like length waste the fewest steps on padding, as CTranslate2,
    fairseq and Marian batch. Memory stays bounded by the window, and the
    first translations come out once the first window is done. Each text
    is decoded by itself (padding is masked, lengths are per text), so the
    order changes no translation beyond float rounding. With stderr a
    terminal, a progress bar counts the texts there (out of `total` when
    known).

    Args:
        translate: a function of a list of str to a list of str, e.g.
            `translation_function(path)` or `signature_texts(signature)`.
        texts: an iterable of str (or of anything `key` measures).
        batch_size: texts per call of `translate`.
        total: the number of texts, for the progress bar.
        description: the progress bar's label.
        window: texts read ahead and sorted; `batch_size` (or less)
            translates in input order.
        key: the sort key of a text; by default its length in characters,
            a proxy of its pieces that needs no tokenizer (the export
            tokenizes inside) and, unlike words, holds for unspaced scripts.

    Example:

    >>> def shout(batch):
    ...     print(batch)
    ...     return [text.upper() for text in batch]
    >>> list(translate_batches(shout, ["ccc", "a", "bb"], batch_size=2))
    ['a', 'bb']
    ['ccc']
    [['CCC', 'A', 'BB']]
    """
    import tqdm

    if batch_size < 1:  # a batch of 0 texts would end the stream at once
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}.")
    texts = iter(texts)
    with tqdm.tqdm(
        total=total, desc=description, unit="sentence", disable=not sys.stderr.isatty()
    ) as progress:
        while ahead := list(itertools.islice(texts, window)):
            order = sorted(range(len(ahead)), key=lambda index: key(ahead[index]))
            translations = [None] * len(ahead)
            for start in range(0, len(order), batch_size):
                batch = order[start : start + batch_size]
                results = translate([ahead[index] for index in batch])
                for index, result in zip(batch, results, strict=True):
                    translations[index] = result
                progress.update(len(batch))
            yield translations


def translate_lines(
    path,
    lines,
    output,
    batch_size=32,
    beam_size=None,
    alpha=None,
    signature="serving_default",
    total=None,
    threads=None,
    long_inputs="split",
    references=None,
    max_input_length=None,
    window=SORT_WINDOW,
    prefixes=None,
    controls=None,
    glossary=None,
    constraints=None,
    alignments=None,
    markup=None,
):
    """Translates `lines` (bytes, one sentence each) into `output`, a line each.

    Lines are read a window ahead and translated in batches of like length;
    each window's translations are written, in input order, and flushed
    before the next window is read (`translate_batches`; `decoded_lines`
    for the text rules). A
    line longer than the model's limit is split or cut (`long_inputs`),
    and the long lines are counted on stderr at the end.

    Args:
        path: the export: a SavedModel's version folder or a CTranslate2
            model folder.
        lines: an iterable of bytes, e.g. a file opened in binary mode.
        output: a text stream, e.g. `sys.stdout`.
        batch_size: lines per call of the export (for a CTranslate2 export,
            per batch of calls, see `CTranslate2Translator`).
        beam_size, alpha, signature, threads: see `translation_function`.
        total: the number of lines, for the progress bar.
        long_inputs: "split" or "truncate", see `LongInputs`.
        max_input_length: see `long_inputs_function`.
        references: None, or a list of str, a reference per line.
        window: lines read ahead and sorted by length (1: each line is
            translated before the next is read, for a terminal).
        prefixes: None, or an iterable of bytes, a typed prefix per line
            (an empty one for none): each translation begins with its
            line's prefix as typed. A split line's prefix goes with its
            first part. Prefixes longer than the model's limit are cut,
            and counted on stderr at the end.
        controls: None, or a `ControlSettings` for every line.
        glossary: None, or a `glossary.Glossary` for every line; the
            translations that lack a term (it did not fit the length
            limit) are counted on stderr at the end.
        constraints: None, or an iterable of bytes, a line of phrases per
            line (`glossary.constraint_terms`). A split line's required
            phrases go with its first part, its banned ones with every
            part.
        alignments: None, or a text stream that gets each translation's
            word alignment with its line, a Pharaoh line each (a split
            line's joined from its parts'; with `markup`, of the plain
            texts).
        markup: None, "xml" or "html": each line's tags and placeholders
            are carried through its translation (`MarkupTranslation`);
            lines whose markup is not well-formed are translated as plain
            text and counted on stderr at the end.

    Returns:
        None, or with `references`, `corpus_scores` of the translations.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    translate = long_inputs_function(
        path,
        long_inputs,
        batch_size,
        max_input_length,
        signature,
        beam_size,
        alpha,
        threads,
        controls,
        glossary,
        aligned=alignments is not None or markup is not None,
    )
    engine = translate.translate.engine  # the export's, see `translation_function`
    summaries = [translate]
    if markup is not None:
        translate = MarkupTranslation(translate, markup, engine.bans_phrases)
        summaries.append(translate)
    run, texts = with_line_files(translate, decoded_lines(lines), prefixes, constraints)
    translations = [] if references is not None else None
    for ahead in translate_batches(
        run, texts, batch_size, total, window=window, key=text_length
    ):
        if alignments is not None or markup is not None:
            ahead, links = (list(column) for column in zip(*ahead, strict=True))
        if alignments is not None:
            alignments.write("".join(line + "\n" for line in links))
            alignments.flush()
        output.write("".join(translation + "\n" for translation in ahead))
        output.flush()
        if translations is not None:
            translations += ahead
    for counted in summaries:
        if counted.summary():
            print(counted.summary(), file=sys.stderr)
    report_cut_prefixes(engine)
    if references is None:
        return None
    from keras_transformer.evaluation import corpus_scores

    return corpus_scores(translations, references)


def report_cut_prefixes(engine):
    """Counts on stderr the prefixes `engine` cut at the model's limit, and
    the translations that lack a required term."""
    if engine.prefixes_cut:
        print(
            f"{engine.prefixes_cut} prefixes were longer than the model's limit of "
            f"{engine.source_limit()[1]} pieces and were cut there",
            file=sys.stderr,
        )
    if engine.terms_missed:
        print(
            f"{engine.terms_missed} translations lack a glossary term: it did not "
            "fit their length limit",
            file=sys.stderr,
        )
