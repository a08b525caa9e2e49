"""Translating a stream of lines with an export, batch by batch.

Both kinds of export translate: a SavedModel (`export_translator`) and a
CTranslate2 model (`export_ctranslate2`).
"""

import functools
import itertools
import os
import sys

import tensorflow as tf

from keras_transformer.export.ctranslate2_model import is_ctranslate2_export
from keras_transformer.export.ctranslate2_translator import CTranslate2Translator
from keras_transformer.recipe.config import decoding_settings


def load_export(path):
    """Loads the SavedModel of an export's version folder, with clear errors.

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
    return tf.saved_model.load(path)


def translation_function(path, signature="serving_default", beam_size=None, alpha=None):
    """A function of a list of str that returns their translations.

    Args:
        path: an export: a SavedModel's version folder (`export_translator`)
            or a CTranslate2 model folder (`export_ctranslate2`).
        signature: "serving_default" (beam search with the export's settings)
            or "greedy".
        beam_size, alpha: beam search with these instead (the `beam`
            signature); one left None takes the export's value.

    Returns:
        A function of a list of str (B,) -> a list of str (B,).
    """
    if (beam_size, alpha) != (None, None) and signature != "serving_default":
        raise ValueError("--beam-size and --alpha go with the beam search signature.")
    if beam_size is not None and beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
    if is_ctranslate2_export(path):
        return _ctranslate2_function(path, signature, beam_size, alpha)
    run = _saved_model_function(load_export(path), signature, beam_size, alpha)
    return lambda texts: [
        text.decode("utf-8") for text in run(tf.constant(texts, tf.string)).numpy()
    ]


def _saved_model_function(export, signature, beam_size, alpha):
    """`translation_function` of a loaded SavedModel: bytes (B,) -> bytes (B,)."""
    if beam_size is None and alpha is None:
        run = export.signatures[signature]
        return lambda texts: run(text=texts)["translation"]
    defaults = getattr(export, "defaults", None)
    if defaults is None and None in (beam_size, alpha):
        raise ValueError(
            "This export does not record its beam size and alpha; give both "
            "--beam-size and --alpha."
        )
    saved = {name: value.numpy() for name, value in (defaults or {}).items()}
    beam_size, alpha = decoding_settings(beam_size, alpha, saved or None)
    run = export.signatures["beam"]
    return lambda texts: run(
        text=texts, beam_size=tf.constant(beam_size), alpha=tf.constant(alpha)
    )["translation"]


def _ctranslate2_function(path, signature, beam_size, alpha):
    """`translation_function` of a CTranslate2 export: str (B,) -> str (B,)."""
    if signature not in ("serving_default", "greedy"):
        raise ValueError(
            "A CTranslate2 export translates with the serving_default or greedy "
            f"signature, not {signature!r}."
        )
    translator = CTranslate2Translator(path)
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


def translate_batches(translate, texts, batch_size=32, total=None, description=None):
    """Translates `texts` `batch_size` at a time; yields each batch's translations.

    The one batching loop of the package: the job's test and validation
    decoding, `evaluate` and `translate` go through it. Texts are read from
    the iterable as they are needed, so memory stays bounded. With stderr a
    terminal, a progress bar counts the texts there (out of `total` when
    known).

    Args:
        translate: a function of a list of str to a list of str, e.g.
            `translation_function(path)` or `signature_texts(signature)`.
        texts: an iterable of str.
        batch_size: texts per call of `translate`.
        total: the number of texts, for the progress bar.
        description: the progress bar's label.

    Example:

    >>> list(translate_batches(lambda batch: [t.upper() for t in batch], "abc", 2))
    [['A', 'B'], ['C']]
    """
    import tqdm

    if batch_size < 1:  # a batch of 0 texts would end the stream at once
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    texts = iter(texts)
    with tqdm.tqdm(
        total=total, desc=description, unit="sentence", disable=not sys.stderr.isatty()
    ) as progress:
        while batch := list(itertools.islice(texts, batch_size)):
            yield translate(batch)
            progress.update(len(batch))


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
):
    """Translates `lines` (bytes, one sentence each) into `output`, a line each.

    Each batch's translations are written and flushed before the next batch
    is read (`translate_batches`; `decoded_lines` for the text rules).

    Args:
        path: the export: a SavedModel's version folder or a CTranslate2
            model folder.
        lines: an iterable of bytes, e.g. a file opened in binary mode.
        output: a text stream, e.g. `sys.stdout`.
        batch_size: lines per call of the export (for a CTranslate2 export,
            per batch of calls, see `CTranslate2Translator`).
        beam_size, alpha, signature: see `translation_function`.
        total: the number of lines, for the progress bar.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    translate = translation_function(path, signature, beam_size, alpha)
    for batch in translate_batches(translate, decoded_lines(lines), batch_size, total):
        output.write("".join(translation + "\n" for translation in batch))
        output.flush()
