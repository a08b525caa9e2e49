"""Translating text with a CTranslate2 export, by the rules of `Translator`."""

import json
import os

import sentencepiece

from keras_transformer.export.ctranslate2_model import (
    SETTINGS_FILE,
    import_ctranslate2,
    is_ctranslate2_export,
)
from keras_transformer.export.saved_model import VOCABULARY_FILE
from keras_transformer.recipe.config import decoding_settings


class CTranslate2Translator:
    """Text in, text out with a folder written by `export_ctranslate2`.

    The input rules are `Translator`'s: a source keeps its first
    `max_length - 1` pieces (CTranslate2 appends the end token), a source
    with no pieces (empty or whitespace only) translates to the empty
    string without a call to CTranslate2, and every source may have up to
    its length (end token included) + `extra_length` output tokens, capped
    by `max_length`. CTranslate2 takes one length limit per call: greedy
    decoding translates a batch in one call, with the largest limit, and
    cuts each output to its own limit (greedy tokens do not depend on the
    limit); beam search, whose beams do, makes one call per limit. Either
    way each source is decoded as it would be alone, as in the SavedModel.

    Greedy decoding gives the SavedModel's tokens, and so does beam search
    at alpha 0. For alpha > 0 the two may differ: CTranslate2 divides a
    hypothesis's log-probability by length ** alpha (the length counting
    the end token, as in `beam_search`), where `beam_search` divides by
    ((5 + length) / 6) ** alpha, and it stops once `beam_size` hypotheses
    have ended, where `beam_search` stops once no alive beam can win. A
    beam size of 1 is greedy decoding here, whatever alpha.

    Args:
        path: the export's folder.
        threads: CPU threads of CTranslate2 (`intra_threads`, with one
            translation at a time); None or 0 for all cores.

    Attributes:
        beam_size, alpha, extra_length, max_length: the settings of the
            exported `Translator` (`decoding.json`).

    Raises:
        FileNotFoundError: `path` holds no CTranslate2 model.
        ImportError: ctranslate2 is not installed.
    """

    def __init__(self, path, threads=None):
        if not is_ctranslate2_export(path):
            raise FileNotFoundError(f"No CTranslate2 model at {path}.")
        ctranslate2 = import_ctranslate2()
        with open(os.path.join(path, SETTINGS_FILE)) as file:
            settings = json.load(file)
        self.beam_size = settings["beam_size"]
        self.alpha = settings["alpha"]
        self.extra_length = settings["extra_length"]
        self.max_length = settings["max_length"]
        self.tokenizer = sentencepiece.SentencePieceProcessor(
            model_file=os.path.join(path, VOCABULARY_FILE)
        )
        if threads is not None and threads < 0:
            raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}.")
        self.threads = threads or _cores()
        self.translator = ctranslate2.Translator(
            path, inter_threads=1, intra_threads=self.threads
        )

    def translate(self, texts, beam_size=None, alpha=None):
        """Translates `texts` (str), with the export's settings unless given.

        Args:
            texts: a list of str.
            beam_size: beams, 1 for greedy decoding; None for the export's.
            alpha: the length-penalty exponent (CTranslate2's
                `length_penalty`), >= 0; None for the export's.

        Returns:
            A list of str, a translation per text.

        Raises:
            ValueError: `beam_size` < 1 or `alpha` < 0.
        """
        saved = {"beam_size": self.beam_size, "alpha": self.alpha}
        beam_size, alpha = decoding_settings(beam_size, alpha, saved)
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}.")
        pieces = [
            self.tokenizer.encode(text, out_type=str)[: self.max_length - 1]
            for text in texts
        ]
        limits = {}  # index of a source with pieces -> its output limit
        for index, source in enumerate(pieces):
            if source:
                limits[index] = min(
                    len(source) + 1 + self.extra_length, self.max_length
                )
        if beam_size == 1:  # greedy: a longer limit only adds tokens at the end
            groups = {max(limits.values(), default=0): list(limits)}
        else:
            groups = {}
            for index, limit in limits.items():
                groups.setdefault(limit, []).append(index)
        translations = [""] * len(texts)
        for limit, indices in groups.items():
            results = self.translator.translate_batch(
                [pieces[index] for index in indices],
                beam_size=beam_size,
                length_penalty=alpha,
                max_decoding_length=limit,
                min_decoding_length=0,  # the end token may come first
                max_input_length=0,  # truncated above
                return_end_token=True,  # counted in the length penalty
            )
            for index, result in zip(indices, results, strict=True):
                # The start, end and padding pieces decode to nothing.
                tokens = result.hypotheses[0][: limits[index]]
                translations[index] = self.tokenizer.decode(tokens)
        return translations


def _cores():
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
