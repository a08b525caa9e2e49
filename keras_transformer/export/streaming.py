"""Translating a stream of lines with an export, batch by batch.

Both kinds of export translate: a SavedModel (`export_translator`) and a
CTranslate2 model (`export_ctranslate2`).
"""

import functools
import itertools
import os
import sys

import tensorflow as tf

from keras_transformer.data.tokenizer import sentencepiece_processors
from keras_transformer.decoding_defaults import decoding_settings
from keras_transformer.export.ctranslate2_model import is_ctranslate2_export
from keras_transformer.export.ctranslate2_translator import CTranslate2Translator
from keras_transformer.export.long_inputs import LongInputs, check_policy
from keras_transformer.export.saved_model import VOCABULARY_FILE


def load_export(path, threads=None):
    """Loads the SavedModel of an export's version folder, with clear errors.

    `threads`: TensorFlow's CPU threads (`set_threads`), set once the path
    is found to hold a SavedModel.

    Raises:
        FileNotFoundError: nothing at `path`.
        ValueError: `path` is the model folder of `export_translator`
            (holding version folders) or holds no SavedModel.
    """
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops)

    if not os.path.isdir(path):
        raise FileNotFoundError(f"No export at {path}.")
    if not os.path.exists(os.path.join(path, "saved_model.pb")):
        versions = sorted(
            (int(name) for name in os.listdir(path) if name.isdigit()), reverse=True
        )
        if versions:
            raise ValueError(
                f"{path} holds the versions {versions}; pass one, e.g. "
                f"{os.path.join(path, str(versions[0]))}."
            )
        raise ValueError(f"{path} holds no SavedModel (saved_model.pb).")
    set_threads(threads)
    return tf.saved_model.load(path)


def translation_function(
    path, signature="serving_default", beam_size=None, alpha=None, threads=None
):
    """A function of a list of str that returns their translations.

    A source longer than the model's limit is cut there, as the export
    does; `long_inputs_function` splits it instead.

    Args:
        path: an export: a SavedModel's version folder (`export_translator`)
            or a CTranslate2 model folder (`export_ctranslate2`).
        signature: "serving_default" (beam search with the export's settings)
            or "greedy".
        beam_size, alpha: beam search with these instead (the `beam`
            signature); one left None takes the export's value.
        threads: CPU threads of the engine (`set_threads`); None leaves
            the engine's default (all cores).

    Returns:
        A function of a list of str (B,) -> a list of str (B,).
    """
    translate, _ = _open_export(path, signature, beam_size, alpha, threads)
    return translate


def long_inputs_function(
    path,
    policy="split",
    batch_size=32,
    max_input_length=None,
    signature="serving_default",
    beam_size=None,
    alpha=None,
    threads=None,
):
    """`translation_function` that splits (or cuts and counts) long sources.

    Args:
        path, signature, beam_size, alpha, threads: see
            `translation_function`.
        policy: "split" or "truncate" (cut, and counted), see `LongInputs`.
        batch_size: the most texts per engine call.
        max_input_length: with "split", split longer sources than this many
            pieces (at most, and by default, the model's limit).

    Returns:
        A `LongInputs`: a function of a list of str (B,) -> a list of str
        (B,), whose `summary()` counts the long lines.
    """
    check_policy(policy)
    translate, source_limit = _open_export(path, signature, beam_size, alpha, threads)
    tokenizer, limit = source_limit()
    return LongInputs(translate, tokenizer, limit, policy, batch_size, max_input_length)


def _open_export(path, signature, beam_size, alpha, threads):
    """`(translate, source_limit)` of an export: its translation function and
    a function that returns its SentencePiece processor and the most source
    pieces it reads."""
    if (beam_size, alpha) != (None, None) and signature != "serving_default":
        raise ValueError(
            "beam_size and alpha go with the serving_default signature (beam "
            f"search), not {signature!r}."
        )
    if beam_size is not None and beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
    if threads is not None and threads < 0:
        raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}.")
    if is_ctranslate2_export(path):
        translator = CTranslate2Translator(path, threads=threads)
        translate = _ctranslate2_function(translator, signature, beam_size, alpha)
        return translate, lambda: (translator.tokenizer, translator.max_length - 1)
    export = load_export(path, threads)
    run = _saved_model_function(export, signature, beam_size, alpha)

    def translate(texts):
        texts = run(tf.constant(texts, tf.string)).numpy()
        return [text.decode("utf-8") for text in texts]

    return translate, lambda: _saved_model_limit(export, path)


def set_threads(threads):
    """Runs TensorFlow's ops on `threads` CPU threads (0: all cores).

    Sets the intra-op and inter-op thread pools, which TensorFlow reads
    when it first runs something; afterwards (in a Python session that
    ran TensorFlow already) a different count only warns on stderr.
    """
    if threads is None:
        return
    threading = tf.config.threading
    current = threading.get_intra_op_parallelism_threads()
    if current == threads == threading.get_inter_op_parallelism_threads():
        return
    try:
        threading.set_intra_op_parallelism_threads(threads)
        threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # TensorFlow has started its thread pools
        print(
            f"warning: TensorFlow runs already; threads={threads} is not applied",
            file=sys.stderr,
        )


def _saved_model_limit(export, path):
    """The SentencePiece processor of a SavedModel export and the most
    source pieces its model reads."""
    tokenizer, _ = sentencepiece_processors(
        os.path.join(path, "assets", VOCABULARY_FILE)
    )
    limit = getattr(export, "max_source_pieces", None)
    if limit is not None:
        return tokenizer, int(limit.numpy())
    # An export from before the limit was saved: the `attention` signature
    # shows how many pieces (and the end id) of a long source it reads.
    probe = tf.constant([" ".join(["a"] * 4096)])
    pieces = export.signatures["attention"](text=probe)["source_pieces"]
    return tokenizer, int(pieces.shape[1]) - 1


def _saved_model_function(export, signature, beam_size, alpha):
    """`translation_function` of a loaded SavedModel: bytes (B,) -> bytes (B,)."""
    if beam_size is None and alpha is None:
        run = export.signatures[signature]
        return lambda texts: run(text=texts)["translation"]
    defaults = getattr(export, "defaults", None)
    if defaults is None and None in (beam_size, alpha):
        raise ValueError(
            "This export records no decoding settings; give both beam_size and alpha."
        )
    saved = {name: value.numpy() for name, value in (defaults or {}).items()}
    beam_size, alpha = decoding_settings(beam_size, alpha, saved)
    run = export.signatures["beam"]
    return lambda texts: run(
        text=texts, beam_size=tf.constant(beam_size), alpha=tf.constant(alpha)
    )["translation"]


def _ctranslate2_function(translator, signature, beam_size, alpha):
    """`translation_function` of a `CTranslate2Translator`: str (B,) -> str (B,)."""
    if signature not in ("serving_default", "greedy"):
        raise ValueError(
            "A CTranslate2 export translates with the serving_default or greedy "
            f"signature, not {signature!r}."
        )
    if signature == "greedy":
        beam_size, alpha = 1, 0.0
    return functools.partial(translator.translate, beam_size=beam_size, alpha=alpha)


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
    )
    translations = [] if references is not None else None
    for ahead in translate_batches(
        translate, decoded_lines(lines), batch_size, total, window=window
    ):
        output.write("".join(translation + "\n" for translation in ahead))
        output.flush()
        if translations is not None:
            translations += ahead
    if translate.summary():
        print(translate.summary(), file=sys.stderr)
    if references is None:
        return None
    from keras_transformer.evaluation import corpus_scores

    return corpus_scores(translations, references)
