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
    beam_size = int(defaults["beam_size"].numpy()) if beam_size is None else beam_size
    alpha = float(defaults["alpha"].numpy()) if alpha is None else alpha
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

    Lines are read `batch_size` at a time, so memory stays bounded, and each
    batch's translations are written and flushed before the next is read.
    A line that is not valid UTF-8 is translated with its bad bytes
    replaced by U+FFFD, with a warning on stderr naming the line. With
    `total` lines known and stderr a terminal, a progress bar runs there.

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
    import tqdm

    if batch_size < 1:  # a batch of 0 lines would end the stream at once
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    translate = translation_function(path, signature, beam_size, alpha)
    lines = iter(lines)
    progress = tqdm.tqdm(
        total=total, unit="line", disable=total is None or not sys.stderr.isatty()
    )
    number = 0
    while batch := list(itertools.islice(lines, batch_size)):
        texts = []
        for line in batch:
            number += 1
            line = line.rstrip(b"\r\n")
            try:
                texts.append(line.decode("utf-8"))
            except UnicodeDecodeError:
                print(
                    f"warning: line {number} is not valid UTF-8; its bad bytes "
                    "were replaced by U+FFFD",
                    file=sys.stderr,
                )
                texts.append(line.decode("utf-8", errors="replace"))
        for translation in translate(texts):
            output.write(translation + "\n")
        output.flush()
        progress.update(len(batch))
    progress.close()
