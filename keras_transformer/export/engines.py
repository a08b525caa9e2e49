"""One interface to an export, whichever its kind, chosen once by `open_export`.

Two engines answer it: `SavedModelEngine` (a version folder of
`export_translator`, through its signatures) and `CTranslate2Translator`
(a folder of `export_ctranslate2`). The command line and the library reach
both through the same methods:

- `beam_size`, `alpha`: the export's decoding settings (None for a
  SavedModel too old to record them);
- `translate(texts, beam_size=None, alpha=None, prefixes=None,
  controls=None, terms=None)`: a translation per text; beam size 1 is
  greedy decoding; `prefixes` one typed prefix per text, `controls` a
  `ControlSettings` for all, `terms` a `Terms` per text, the phrases that
  must appear and must not (a SavedModel's; CTranslate2 refuses them);
- `hypotheses(texts, n_best, beam_size, alpha, sampling, temperature,
  prefixes=None, controls=None, terms=None)`: n-best lists or draws
  (`set_seed(seed)` seeds them), both under `translate`'s prefixes,
  controls and terms (a draw cannot place a required phrase: refused);
- `score(sources, targets)`: forced decoding;
- `source_limit()`: the SentencePiece processor of the sources and the
  most source pieces the model reads;
- `prefixes_cut`: how many prefixes so far had more pieces than the model
  reads, and were cut; `terms_missed`: how many translations so far lack
  a required phrase (it did not fit the length limit).

A control an engine lacks is refused there, with one message.
"""

import itertools
import os
import random
import sys

import tensorflow as tf

from keras_transformer.data.tokenizer import sentencepiece_processors
from keras_transformer.decoding_defaults import decoding_settings, is_greedy
from keras_transformer.export.control_settings import ControlSettings, Terms
from keras_transformer.export.ctranslate2_model import is_ctranslate2_export
from keras_transformer.export.saved_model import VOCABULARY_FILE, versions


def open_export(path, threads=None):
    """The engine of the export at `path`: a `CTranslate2Translator` for a
    CTranslate2 model folder, else a `SavedModelEngine`.

    Args:
        path: a SavedModel's version folder or a CTranslate2 model folder.
        threads: CPU threads of the engine; None leaves its default (all
            cores).
    """
    if threads is not None and threads < 0:
        raise ValueError(f"threads must be >= 0 (0: all cores), got {threads}.")
    if is_ctranslate2_export(path):
        from keras_transformer.export.ctranslate2_translator import (
            CTranslate2Translator,
        )

        return CTranslate2Translator(path, threads=threads)
    return SavedModelEngine(path, threads)


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
        held = versions(path)
        if held:
            raise ValueError(
                f"{path} holds the versions {held}; pass one, e.g. "
                f"{os.path.join(path, str(held[0]))}."
            )
        raise ValueError(f"{path} holds no SavedModel (saved_model.pb).")
    set_threads(threads)
    return tf.saved_model.load(path)


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


class SavedModelEngine:
    """An `export_translator` version folder, through its signatures.

    Args:
        path: the version folder.
        threads: TensorFlow's CPU threads (`set_threads`).
    """

    bans_phrases = True  # `terms` may ban phrases

    def __init__(self, path, threads=None):
        self.path = path
        self.export = load_export(path, threads)
        defaults = getattr(self.export, "defaults", None)
        self.saved = None
        if defaults is not None:
            self.saved = {name: value.numpy() for name, value in defaults.items()}
        self.beam_size = None if self.saved is None else int(self.saved["beam_size"])
        self.alpha = None if self.saved is None else float(self.saved["alpha"])
        self.prefixes_cut = self.terms_missed = 0
        self._seed = random.randrange(2**31)
        self._draws = itertools.count()

    def signature(self, name):
        """The export's signature `name`, or a ValueError if it lacks it."""
        if name not in self.export.signatures:
            raise ValueError(
                f"{self.path} has no {name} signature; export the model again."
            )
        return self.export.signatures[name]

    def settings(self, beam_size, alpha):
        """`(beam_size, alpha)`: each given value, else the export's."""
        if self.saved is None and None in (beam_size, alpha):
            raise ValueError(
                "This export records no decoding settings; give both beam_size "
                "and alpha."
            )
        return decoding_settings(beam_size, alpha, self.saved)

    def translate(
        self,
        texts,
        beam_size=None,
        alpha=None,
        prefixes=None,
        controls=None,
        terms=None,
    ):
        """A translation per text (see the module docstring)."""
        _check_beam_size(beam_size)
        text = tf.constant(texts, tf.string, shape=[len(texts)])
        neutral = (controls or ControlSettings()).neutral
        if prefixes is not None or terms is not None or not neutral:
            outputs = self._controlled(
                texts, beam_size, alpha, prefixes, controls, terms
            )
        elif is_greedy(beam_size):
            outputs = self.signature("greedy")(text=text)
        elif (beam_size, alpha) == (None, None):
            outputs = self.signature("serving_default")(text=text)
        else:
            beam_size, alpha = self.settings(beam_size, alpha)
            outputs = self.signature("beam")(
                text=text, beam_size=tf.constant(beam_size), alpha=tf.constant(alpha)
            )
        return _strings(outputs["translation"])

    @staticmethod
    def _row_tensors(texts, prefixes, controls, terms, copies=1):
        """The controlled signatures' per-row inputs for `texts` (a list),
        the text's included, each row `copies` times in a row."""
        controls = controls or ControlSettings()
        count = len(texts)
        prefixes = [""] * count if prefixes is None else prefixes
        terms = [Terms()] * count if terms is None else terms
        for name, values in (("prefixes", prefixes), ("terms", terms)):
            if len(values) != count:
                raise ValueError(
                    f"{count} texts but {len(values)} {name}; give one each."
                )
        texts, prefixes, terms = (
            [value for value in values for _ in range(copies)]
            for values in (texts, prefixes, terms)
        )
        rows = len(texts)
        return dict(
            text=tf.constant(texts, tf.string, shape=[rows]),
            prefix=tf.constant(prefixes, tf.string, shape=[rows]),
            repetition_penalty=tf.fill([rows], float(controls.repetition_penalty)),
            no_repeat_ngram_size=tf.fill([rows], controls.no_repeat_ngram_size),
            min_length=tf.fill([rows], controls.min_length),
            disable_unk=tf.fill([rows], bool(controls.disable_unk)),
            banned=phrase_table([row.banned for row in terms]),
            required=phrase_table([row.required for row in terms]),
        )

    def _controlled(
        self,
        texts,
        beam_size,
        alpha,
        prefixes,
        controls,
        terms,
        signature="controlled_beam",
    ):
        beam_size, alpha = (1, 0.0) if is_greedy(beam_size) else (beam_size, alpha)
        beam_size, alpha = self.settings(beam_size, alpha)
        outputs = self.signature(signature)(
            **self._row_tensors(texts, prefixes, controls, terms),
            beam_size=tf.constant(beam_size),
            alpha=tf.constant(alpha),
        )
        rows = len(texts)
        self.prefixes_cut += int(outputs["prefix_cut"].numpy().sum())
        best_met = tf.reshape(outputs["required_met"], [rows, -1])[:, 0]
        self.terms_missed += int(tf.reduce_sum(tf.cast(~best_met, tf.int32)))
        return outputs

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
    ):
        """Per text, `n_best` (score, translation) pairs: the `nbest`
        signature's best first (`controlled_nbest`'s under prefixes,
        controls or terms), or with `sampling` (("topk", K) or ("topp", P))
        `n_best` draws of the `sample` signature (`controlled_sample`'s
        under them)."""
        controlled = (prefixes, terms) != (None, None) or not (
            controls or ControlSettings()
        ).neutral
        if sampling is not None:
            rows = None
            if controlled:  # each text n_best times, as `_samples` draws
                rows = self._row_tensors(texts, prefixes, controls, terms, n_best)
            return self._samples(texts, n_best, sampling, temperature, rows)
        text = tf.constant(texts, tf.string, shape=[len(texts)])
        beam_size, alpha = self.settings(beam_size, alpha)
        if controlled:
            outputs = self._controlled(
                texts, beam_size, alpha, prefixes, controls, terms, "controlled_nbest"
            )
        else:
            outputs = self.signature("nbest")(
                text=text, beam_size=tf.constant(beam_size), alpha=tf.constant(alpha)
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

    def set_seed(self, seed):
        """The seed of the next draws; each call draws with the next one."""
        self._seed, self._draws = seed, itertools.count()

    def _samples(self, texts, n_best, sampling, temperature, rows=None):
        """`n_best` draws a text: `sample`'s, or with `rows` (`_row_tensors`
        of the texts, `n_best` copies each) `controlled_sample`'s."""
        kind, value = sampling
        settings = dict(
            top_k=tf.constant(value if kind == "topk" else 0),
            top_p=tf.constant(float(value) if kind == "topp" else 1.0),
            temperature=tf.constant(float(temperature)),
            seed=tf.constant((self._seed + next(self._draws)) % 2**31),
        )
        if rows is None:
            # Each text n_best times in one batch: every row draws on its own.
            repeated = [text for text in texts for _ in range(n_best)]
            text = tf.constant(repeated, tf.string, shape=[len(repeated)])
            outputs = self.signature("sample")(text=text, **settings)
        else:
            if any(rows["required"].numpy().ravel()):
                raise ValueError(
                    "Required phrases (a glossary's terms) need beam search: "
                    "sampling cannot place them."
                )
            outputs = self.signature("controlled_sample")(**rows, **settings)
            self.prefixes_cut += int(outputs["prefix_cut"].numpy()[::n_best].sum())
        drawn = list(
            zip(
                outputs["score"].numpy().tolist(),
                _strings(outputs["translation"]),
                strict=True,
            )
        )
        return [drawn[i : i + n_best] for i in range(0, len(drawn), n_best)]

    def score(self, sources, targets):
        """Per pair, (sum of log-probabilities, tokens): the `score` signature."""
        outputs = self.signature("score")(
            source=tf.constant(sources, tf.string, shape=[len(sources)]),
            target=tf.constant(targets, tf.string, shape=[len(targets)]),
        )
        return list(
            zip(
                outputs["score"].numpy().tolist(),
                outputs["tokens"].numpy().tolist(),
                strict=True,
            )
        )

    def align(self, sources, targets):
        """Per pair, its word alignment as a Pharaoh line: the `align` signature."""
        outputs = self.signature("align")(
            source=tf.constant(sources, tf.string, shape=[len(sources)]),
            target=tf.constant(targets, tf.string, shape=[len(targets)]),
        )
        return _strings(outputs["alignment"])

    def source_limit(self):
        """The SentencePiece processor of the sources and the most source
        pieces the model reads."""
        tokenizer, _ = sentencepiece_processors(
            os.path.join(self.path, "assets", VOCABULARY_FILE)
        )
        limit = getattr(self.export, "max_source_pieces", None)
        if limit is not None:
            return tokenizer, int(limit.numpy())
        # An export from before the limit was saved: the `attention` signature
        # shows how many pieces (and the end id) of a long source it reads.
        probe = tf.constant([" ".join(["a"] * 4096)])
        pieces = self.signature("attention")(text=probe)["source_pieces"]
        return tokenizer, int(pieces.shape[1]) - 1


def _check_beam_size(beam_size):
    if beam_size is not None and beam_size < 1:
        raise ValueError(f"beam_size must be >= 1, got {beam_size}.")


def phrase_table(rows):
    """Phrases per text (a list of lists of str) as the controlled
    signatures' `banned` and `required` take them: a string tensor (B, N),
    padded with "" (none)."""
    width = max([1, *map(len, rows)])
    table = [list(row) + [""] * (width - len(row)) for row in rows]
    return tf.constant(table, tf.string, shape=[len(rows), width])


def _strings(tensor):
    return [text.decode("utf-8") for text in tensor.numpy()]
