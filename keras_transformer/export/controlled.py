"""The `Translator`'s controlled signatures: a typed prefix, a repetition
penalty, banned repeated n-grams, a minimum length, no unknown piece,
banned phrases and required phrases (terminology), each given per text.

Every input is one value per text (batch first), so TF Serving's batcher
(`--enable_batching`) can put requests with different prefixes and
settings in one batch: each row is decoded as it would be alone. The
controls are `keras_transformer.decoding.controls`', the prefix
`decoding.prefix`'s, with the text rules of `export.text_prefix`, and the
required phrases `decoding.constraints`'.
"""

import functools

import tensorflow as tf

from keras_transformer.data.pipeline import has_pieces
from keras_transformer.decoding.constraints import phrases_found
from keras_transformer.decoding.controls import (
    MinLength,
    NoRepeatNgram,
    RepetitionPenalty,
)
from keras_transformer.decoding.spellings import SuppressSpellings
from keras_transformer.decoding.token_masks import AllowOnly, SuppressSequences
from keras_transformer.export.control_settings import MAX_NO_REPEAT_NGRAM
from keras_transformer.export.row_inputs import (
    MAX_PHRASE_PIECES,
    check_rows,
    phrase_pieces,
    row_inputs,
)
from keras_transformer.export.specs import (
    ALPHA,
    BEAM_SIZE,
    IDS,
    NUM_RESULTS,
    ROW_CONTROLS,
    SAMPLING,
    beam_settings,
    traced,
)
from keras_transformer.export.text_prefix import TypedPrefix
from keras_transformer.special_ids import UNKNOWN_ID

_ROWS = tf.TensorSpec([None], tf.int32)
_PHRASES = tf.TensorSpec([None, None, MAX_PHRASE_PIECES], tf.int32)


class ControlledTranslation:
    """The signatures `controlled`, `controlled_beam`, `controlled_nbest` and
    `controlled_sample` of a `Translator`.

    A mixin: it uses the translator's `model`, `tokenizer`, `source_ids`,
    `_search`, `beam_size`, `alpha`, `max_length` and `phrase_spellings`
    (an `export.spellings.PhraseSpellings`).

    Per text (each input (B,), `banned` and `required` (B, N)):
        prefix: the start of the translation as typed ("" for none). The
            translation begins with it exactly; where it ends inside a
            word, the word may go on (token healing, `TypedPrefix`). At
            most `max_length - 1` pieces are forced: a longer prefix is cut
            there, reported by the output `prefix_cut`. It counts toward
            the length limit, which is raised to its length where shorter.
            The score is that of the pieces after it (`decode`'s).
        repetition_penalty: CTRL's, > 0 (1: none), as CTranslate2's
            `repetition_penalty`.
        no_repeat_ngram_size: no n-gram of this size repeats, 0 (none) to
            `control_settings.MAX_NO_REPEAT_NGRAM`.
        min_length: generated pieces (the prefix's included) before the
            end piece may come, >= 0; the length limit wins.
        disable_unk: never generate the unknown piece.
        banned: phrases that must not appear, string (B, N), "" for none
            (TF Serving's batcher pads with ""): each is cut into the
            target's pieces as a phrase alone, and no sequence of pieces
            that spells the same characters is generated
            (`SuppressSpellings`), up to `row_inputs.MAX_PHRASE_PIECES`
            pieces and `spellings.MAX_PHRASE_CHARS` characters a phrase. A
            phrase begins a word (SentencePiece's "\u2581", or right after
            a piece that ends a word: "Mails" in "E-Mails") and may end
            inside one: "Haus" banned rules out "Haus" + "es", not a piece
            that goes on past its end ("Hauses").
        required: phrases that must appear (a glossary's target terms),
            string (B, N), "" for none, cut into pieces as `banned` is.
            Beam search places them by dynamic beam allocation
            (`decoding.constraints`); a hypothesis ends only once it has
            them all. Where they do not fit the length limit, the
            translation ends there without them, and the output
            `required_met` is false. More phrases than `beam_size - 1`
            are still placed, but earlier than the model would choose. A
            phrase may not be both required and banned, nor hold a piece
            the vocabulary lacks (the unknown piece).

    A value out of range fails the call with an InvalidArgumentError that
    names it. A text without pieces translates to its prefix, score 0.
    """

    @traced(*ROW_CONTROLS)
    def controlled(
        self,
        text,
        prefix,
        repetition_penalty,
        no_repeat_ngram_size,
        min_length,
        disable_unk,
        banned,
        required,
    ):
        """Beam search with the default beam size and alpha, under the
        controls each text gives (see the class docstring).

        Returns:
            {"translation": string (B,), "score": float32 (B,),
            "prefix_cut": bool (B,), "required_met": bool (B,)}.
        """
        rows = row_inputs(locals())
        beam_size = tf.constant(self.beam_size, tf.int32)
        return _best(
            self._controlled_texts(text, rows, beam_size, tf.constant(self.alpha))
        )

    @traced(*ROW_CONTROLS, BEAM_SIZE, ALPHA)
    def controlled_beam(
        self,
        text,
        prefix,
        repetition_penalty,
        no_repeat_ngram_size,
        min_length,
        disable_unk,
        banned,
        required,
        beam_size,
        alpha,
    ):
        """`controlled` with a chosen beam size (clipped to [1, 64]; 1
        gives greedy decoding's tokens) and alpha (>= 0).

        `beam_size` and `alpha` are scalars: TF Serving batches only
        `controlled`'s requests.

        Returns:
            {"translation": string (B,), "score": float32 (B,),
            "prefix_cut": bool (B,), "required_met": bool (B,)}.
        """
        rows = row_inputs(locals())
        return _best(
            self._controlled_texts(text, rows, *beam_settings(beam_size, alpha))
        )

    @traced(*ROW_CONTROLS, BEAM_SIZE, ALPHA)
    def controlled_nbest(
        self,
        text,
        prefix,
        repetition_penalty,
        no_repeat_ngram_size,
        min_length,
        disable_unk,
        banned,
        required,
        beam_size,
        alpha,
    ):
        """Every finished hypothesis of `controlled_beam`'s search, best
        first, as the `nbest` signature gives them.

        Returns:
            {"translations": string (B, K), "scores": float32 (B, K),
            "prefix_cut": bool (B,), "required_met": bool (B, K)}, K =
            `beam_size` (clipped to [1, 64]).
        """
        rows = row_inputs(locals())
        beam_size, alpha = beam_settings(beam_size, alpha)
        return self._controlled_texts(text, rows, beam_size, alpha, beam_size)

    @functools.cached_property
    def _typed_prefix(self):
        with tf.init_scope():  # reads the vocabulary eagerly, once
            vocab_size = self.model.config.output_vocab_size
            return TypedPrefix(self.tokenizer, vocab_size, self.max_length - 1)

    @traced(*ROW_CONTROLS, *SAMPLING)
    def controlled_sample(
        self,
        text,
        prefix,
        repetition_penalty,
        no_repeat_ngram_size,
        min_length,
        disable_unk,
        banned,
        required,
        top_k,
        top_p,
        temperature,
        seed,
    ):
        """`sample`'s draws (the same `top_k`, `top_p`, `temperature` and
        `seed`) under the controls each text gives. `required` must hold no
        phrase: a sampler cannot place them, and a call with one fails with
        an InvalidArgumentError that says so.

        Returns:
            {"translation": string (B,), "score": float32 (B,),
            "prefix_cut": bool (B,), "required_met": bool (B,), true}.
        """
        rows = row_inputs(locals())
        none = tf.debugging.assert_equal(
            tf.reduce_any(tf.strings.strip(required) != ""),
            False,
            "required phrases need beam search (controlled): sampling cannot "
            "place them",
        )
        with tf.control_dependencies([none]):
            sampling = tf.identity_n([top_k, top_p, temperature, seed])
        return _best(self._controlled_texts(text, rows, sampling=sampling))

    def _controlled_texts(
        self, text, rows, beam_size=None, alpha=None, num_results=1, sampling=None
    ):
        """The `num_results` best of the beam search, or with `sampling`
        (`controlled_sample`'s top_k, top_p, temperature, seed) one draw:
        {"translations": (B, K), "scores": (B, K), "prefix_cut": (B,),
        "required_met": (B, K)}."""
        with tf.control_dependencies(check_rows(text, rows)):
            source_ids = self.source_ids(text)  # (B, S)
        typed = self._typed_prefix(rows["prefix"])
        banned = phrase_pieces(self.tokenizer, rows["banned"], "banned")  # (B, N, M)
        required = phrase_pieces(self.tokenizer, rows["required"], "required")
        known = tf.debugging.assert_none_equal(
            required,
            UNKNOWN_ID,
            message="a required phrase has pieces the vocabulary lacks "
            "(the unknown piece)",
        )
        with tf.control_dependencies([known]):
            required = tf.identity(required)  # (B, C, M)
        inputs = [
            typed["ids"],
            typed["at"],
            typed["allowed"],
            rows["repetition_penalty"],
            rows["no_repeat_ngram_size"],
            rows["min_length"],
            banned,
            rows["disable_unk"],
        ]
        if sampling is None:
            ids, scores = self._controlled_search(
                source_ids, *inputs, required, beam_size, alpha, num_results
            )  # (B, K, L), (B, K)
        else:
            ids, scores = self._sample(
                source_ids,
                *sampling,
                controls=self._controls(*inputs[1:]),
                prefix=inputs[0],
            )
            ids, scores = ids[:, None], scores[:, None]  # (B, 1, L), (B, 1)
        shape = tf.shape(ids)
        flat = tf.reshape(ids, [shape[0] * shape[1], shape[2]])  # (B * K, L)
        prefix = rows["prefix"]
        texts = self._typed_prefix.begin_as_typed(
            tf.repeat(prefix, shape[1]), self.tokenizer.detokenize(flat)
        )  # (B * K,)
        nonempty = has_pieces(source_ids)[:, None]  # (B, 1)
        return {
            "translations": tf.where(
                nonempty, tf.reshape(texts, shape[:2]), prefix[:, None]
            ),
            "scores": tf.where(nonempty, scores, 0.0),
            "prefix_cut": typed["cut"],
            "required_met": tf.reduce_all(phrases_found(ids, required), axis=-1),
        }

    @traced(
        IDS,
        IDS,
        _ROWS,
        tf.TensorSpec([None, None], tf.bool),
        tf.TensorSpec([None], tf.float32),
        _ROWS,
        _ROWS,
        _PHRASES,
        tf.TensorSpec([None], tf.bool),
        _PHRASES,
        BEAM_SIZE,
        ALPHA,
        NUM_RESULTS,
    )
    def _controlled_search(
        self,
        source_ids,
        prefix_ids,
        at,
        allowed,
        penalty,
        ngram,
        min_length,
        banned,
        disable_unk,
        required,
        beam_size,
        alpha,
        num_results,
    ):
        """The controlled beam search, traced once for the signatures: a
        batch without required phrases runs it without their machinery
        (which would give the same translations, more slowly)."""
        controls = self._controls(
            at, allowed, penalty, ngram, min_length, banned, disable_unk
        )

        def search(constraints):
            return self._search(
                source_ids,
                beam_size,
                alpha,
                num_results,
                controls=controls,
                prefix=prefix_ids,
                constraints=constraints,
            )

        return tf.cond(
            tf.reduce_any(required >= 0),
            lambda: search(required),
            lambda: search(None),
        )

    def _controls(self, at, allowed, penalty, ngram, min_length, banned, disable_unk):
        """`decode`'s `controls` of the per-row inputs."""
        unknown = tf.where(disable_unk, UNKNOWN_ID, -1)[:, None, None]  # (B, 1, 1)
        return [
            RepetitionPenalty(penalty),
            NoRepeatNgram(ngram, max_size=MAX_NO_REPEAT_NGRAM),
            MinLength(min_length),
            SuppressSpellings(*self.phrase_spellings(banned)),
            SuppressSequences(unknown),
            AllowOnly(allowed, at),
        ]


def _best(outputs):
    """`_controlled_texts`'s best hypothesis: {"translation", "score",
    "prefix_cut", "required_met"}, each (B,)."""
    return {
        "translation": outputs["translations"][:, 0],
        "score": outputs["scores"][:, 0],
        "prefix_cut": outputs["prefix_cut"],
        "required_met": outputs["required_met"][:, 0],
    }
