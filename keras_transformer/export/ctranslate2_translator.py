"""Translating text with a CTranslate2 export, by the rules of `Translator`."""

import json
import os

from keras_transformer.data.tokenizer import sentencepiece_processors
from keras_transformer.decoding_defaults import decoding_settings, is_greedy
from keras_transformer.export.control_settings import ControlSettings
from keras_transformer.export.ctranslate2_alignment import pharaoh_lines
from keras_transformer.export.ctranslate2_model import (
    SETTINGS_FILE,
    import_ctranslate2,
    is_ctranslate2_export,
)
from keras_transformer.export.saved_model import VOCABULARY_FILE


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

    One of the engines of `export.engines`. A typed prefix is CTranslate2's
    `target_prefix`: its pieces, all forced (CTranslate2 cannot restrict
    one step's pieces, so a prefix that ends inside a word is not healed
    as the SavedModel's is), at most `max_length - 1` of them; the
    translation begins with the prefix as typed. The controls are
    CTranslate2's options of the same meaning (`repetition_penalty`,
    `no_repeat_ngram_size`, `min_decoding_length`, `disable_unk`).

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

    bans_phrases = False  # no `terms`: CTranslate2 has no constrained decoding

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
        # Sources are cut by `tokenizer`, translations joined by the target's.
        self.tokenizer, self.target_tokenizer = sentencepiece_processors(
            os.path.join(path, VOCABULARY_FILE)
        )
        if threads is not None and threads < 0:
            raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}.")
        self.threads = threads or _cores()
        self.translator = ctranslate2.Translator(
            path, inter_threads=1, intra_threads=self.threads
        )
        self.prefixes_cut = self.terms_missed = 0

    def set_seed(self, seed):
        """The seed of CTranslate2's draws (process-wide)."""
        import_ctranslate2().set_random_seed(seed)

    def source_limit(self):
        """The SentencePiece processor of the sources and the most source
        pieces the model reads."""
        return self.tokenizer, self.max_length - 1

    def translate(
        self,
        texts,
        beam_size=None,
        alpha=None,
        prefixes=None,
        controls=None,
        terms=None,
    ):
        """Translates `texts` (str), with the export's settings unless given.

        Args:
            texts: a list of str.
            beam_size: beams, 1 for greedy decoding; None for the export's.
            alpha: the length-penalty exponent (CTranslate2's
                `length_penalty`), >= 0; None for the export's.
            prefixes: None, or a typed prefix per text ("" for none).
            controls: None, or a `ControlSettings` for all texts.
            terms: None; phrases that must appear or must not are the
                SavedModel's (a ValueError says so).

        Returns:
            A list of str, a translation per text.

        Raises:
            ValueError: `beam_size` < 1 or `alpha` < 0.
        """
        results = self.hypotheses(
            texts,
            1,
            beam_size,
            alpha,
            prefixes=prefixes,
            controls=controls,
            terms=terms,
            _one_greedy_call=True,
        )
        return [hypotheses[0][1] for hypotheses in results]

    def hypotheses(
        self,
        texts,
        n_best=1,
        beam_size=None,
        alpha=None,
        sampling=None,
        temperature=1.0,
        prefixes=None,
        controls=None,
        terms=None,
        _one_greedy_call=False,
    ):
        """The `n_best` best translations of each text, with their scores.

        Scores are CTranslate2's: the sum of the log-probabilities of the
        tokens, end token included, over length ** alpha (the sum itself at
        alpha 0, as `Translator.nbest`'s). A text with no pieces gives
        `n_best` empty translations with score 0.

        Args:
            texts: a list of str.
            n_best: hypotheses per text (CTranslate2's `num_hypotheses`),
                <= `beam_size` unless sampling.
            beam_size: as in `translate`.
            alpha: as in `translate`.
            sampling: None, or ("topk", K) or ("topp", P): draw each token
                from the K most likely ones, or from the smallest set whose
                probability reaches P (`sampling_topk`, `sampling_topp`),
                instead of searching; `beam_size` must then be 1.
            temperature: the logits are divided by it before sampling.
            prefixes: as in `translate`.
            controls: as in `translate`.
            terms: as in `translate`.

        Returns:
            A list, per text, of `n_best` (score, translation) pairs, best
            first (in drawing order when sampling). Below the first, a beam's
            list may differ from `Translator.nbest`'s: CTranslate2 stops once
            `beam_size` hypotheses have ended. Each score is the one
            `Translator.score` gives the same hypothesis (at alpha 0).
        """
        if terms is not None and any(terms):
            raise ValueError(
                "A CTranslate2 export cannot require or ban phrases (it has no "
                "constrained decoding); translate with the SavedModel export "
                "(export_translator) instead."
            )
        saved = {"beam_size": self.beam_size, "alpha": self.alpha}
        beam_size, alpha = decoding_settings(beam_size, alpha, saved)
        if sampling is not None:
            beam_size = 1
        if beam_size < 1:
            raise ValueError(f"beam_size must be >= 1, got {beam_size}.")
        if alpha < 0:
            raise ValueError(f"alpha must be >= 0, got {alpha}.")
        if sampling is None and not 1 <= n_best <= beam_size:
            raise ValueError(
                f"n_best must be in 1..beam_size={beam_size}, got {n_best}."
            )
        # Sampling draws n_best hypotheses from n_best copies of a source.
        copies, n_best = (n_best, 1) if sampling is not None else (1, n_best)
        options = dict(
            beam_size=beam_size,
            length_penalty=alpha,
            num_hypotheses=n_best,
            return_scores=True,
            min_decoding_length=0,  # the end token may come first
            max_input_length=0,  # truncated in `_pieces`
            return_end_token=True,  # counted in the length penalty
        )
        controls = controls or ControlSettings()
        if not controls.neutral:
            options.update(
                repetition_penalty=controls.repetition_penalty,
                no_repeat_ngram_size=controls.no_repeat_ngram_size,
                min_decoding_length=controls.min_length,
                disable_unk=controls.disable_unk,
            )
        if sampling is not None:
            kind, value = sampling
            options["sampling_" + kind] = value
            options["sampling_temperature"] = temperature
            if kind == "topp":  # otherwise CTranslate2 also keeps only the top 1
                options["sampling_topk"] = 0
        pieces = self._pieces(texts)
        forced = self._prefix_pieces(prefixes, len(texts))
        results = [[(0.0, typed)] * n_best * copies for typed in forced.typed]
        by_limit = self._by_limit(pieces, forced.pieces)
        if _one_greedy_call and is_greedy(beam_size) and sampling is None:
            # For `translate`, whose scores are not returned: greedy tokens do
            # not depend on the limit, so one call with the largest one, each
            # output cut to its own, gives the same translations.
            own = {index: limit for limit, group in by_limit.items() for index in group}
            by_limit = {max(by_limit): sorted(own)} if own else {}
        else:
            own = None
        for limit, indices in by_limit.items():
            if prefixes is not None:
                options["target_prefix"] = [
                    forced.pieces[index] for index in indices for _ in range(copies)
                ]
            batch = self.translator.translate_batch(
                [pieces[index] for index in indices for _ in range(copies)],
                max_decoding_length=limit,
                **options,
            )
            for position, index in enumerate(indices):
                drawn = batch[position * copies : (position + 1) * copies]
                # The start, end and padding pieces decode to nothing.
                cut = own[index] if own else None
                results[index] = [
                    (score, forced.begin_as_typed(index, self._text(hypothesis[:cut])))
                    for result in drawn
                    for score, hypothesis in zip(
                        result.scores, result.hypotheses, strict=True
                    )
                ]
        return results

    def _text(self, pieces):
        return self.target_tokenizer.decode(pieces)

    def _prefix_pieces(self, prefixes, count):
        """The `_ForcedPrefixes` of `prefixes` (None: none) for `count` texts."""
        if prefixes is None:
            prefixes = [""] * count
        if len(prefixes) != count:
            raise ValueError(
                f"{count} texts but {len(prefixes)} prefixes; give one each."
            )
        limit = self.max_length - 1
        pieces = [self.target_tokenizer.encode(p, out_type=str) for p in prefixes]
        cut = [len(row) > limit for row in pieces]
        self.prefixes_cut += sum(cut)
        pieces = [row[:limit] for row in pieces]
        detokenized = [self._text(row) for row in pieces]
        return _ForcedPrefixes(list(prefixes), pieces, detokenized, cut)

    def score(self, sources, targets):
        """Forced decoding: the log-probability of each target given its source.

        By `Translator.score`'s rules (CTranslate2's `score_batch`): targets
        keep their first `max_length - 1` pieces and end with the end token;
        a source with no pieces scores 0 with an empty target, else -inf.

        Args:
            sources: a list of str.
            targets: a list of str, as long as `sources`.

        Returns:
            A list of (sum of log-probabilities, tokens) per pair, the end
            token counted.
        """
        if len(sources) != len(targets):
            raise ValueError(
                f"{len(sources)} sources but {len(targets)} targets; give as many."
            )
        source_pieces, target_pieces = self._pieces(sources), self._pieces(targets)
        results = [
            (0.0 if not target else -float("inf"), len(target) + 1)
            for target in target_pieces
        ]
        indices = [index for index, source in enumerate(source_pieces) if source]
        if indices:
            batch = self.translator.score_batch(
                [source_pieces[index] for index in indices],
                [target_pieces[index] for index in indices],
                max_input_length=0,  # truncated in `_pieces`
            )
            for index, result in zip(indices, batch, strict=True):
                results[index] = (float(sum(result.log_probs)), len(result.log_probs))
        return results

    def align(self, sources, targets):
        """Word alignments of each target with its source, as Pharaoh lines.

        `Translator.align`'s links, by its rules: forced decoding (the
        target's pieces as CTranslate2's `target_prefix`) returns the
        attention of the layer and heads the export set
        (`alignment_layer`, `alignment_heads`, the model config's), and
        `alignment.word_links` links the words (`ctranslate2_alignment`).

        Args:
            sources: a list of str.
            targets: a list of str, as long as `sources`.

        Returns:
            A list of str, a Pharaoh line per pair.
        """
        if len(sources) != len(targets):
            raise ValueError(
                f"{len(sources)} sources but {len(targets)} targets; give as many."
            )
        source_pieces = self._pieces(sources)
        target_pieces = self._pieces(targets, self.target_tokenizer)
        lines = [""] * len(sources)
        indices = [
            index
            for index, pair in enumerate(zip(source_pieces, target_pieces, strict=True))
            if all(pair)
        ]
        if not indices:
            return lines
        longest = max(len(target_pieces[index]) for index in indices)
        batch = self.translator.translate_batch(
            [source_pieces[index] for index in indices],
            target_prefix=[target_pieces[index] for index in indices],
            max_decoding_length=longest + 1,
            beam_size=1,
            return_attention=True,
        )
        aligned = pharaoh_lines(
            batch,
            [source_pieces[index] for index in indices],
            [target_pieces[index] for index in indices],
        )
        for index, line in zip(indices, aligned, strict=True):
            lines[index] = line
        return lines

    def _pieces(self, texts, tokenizer=None):
        """The pieces of each text, its first `max_length - 1`, by
        `tokenizer` (the sources')."""
        tokenizer = tokenizer or self.tokenizer
        return [
            tokenizer.encode(text, out_type=str)[: self.max_length - 1]
            for text in texts
        ]

    def _by_limit(self, pieces, prefixes):
        """Output limit -> indices of the sources with pieces that have it;
        a limit is raised to the source's prefix's pieces where shorter."""
        by_limit = {}
        for index, (source, prefix) in enumerate(zip(pieces, prefixes, strict=True)):
            if source:
                limit = min(len(source) + 1 + self.extra_length, self.max_length)
                by_limit.setdefault(max(limit, len(prefix)), []).append(index)
        return by_limit


class _ForcedPrefixes:
    """Typed prefixes, their forced pieces, those pieces detokenized, and
    which were cut."""

    def __init__(self, typed, pieces, detokenized, cut):
        self.typed = typed
        self.pieces = pieces
        self.detokenized = detokenized
        self.cut = cut

    def begin_as_typed(self, index, translation):
        """`translation` with text `index`'s prefix as typed in place of its
        detokenized pieces: `TypedPrefix.begin_as_typed`'s rule."""
        typed, start = self.typed[index], self.detokenized[index]
        if self.cut[index] or not translation.startswith(start):
            return translation
        rest = translation[len(start) :]
        return typed + (rest.lstrip() if typed[-1:].isspace() else rest)


def _cores():
    """The CPU cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1
