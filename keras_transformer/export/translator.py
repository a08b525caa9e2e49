"""A `tf.Module` that translates text: tokenizer + model + decoding in-graph."""

import numbers

import tensorflow as tf

from keras_transformer import decoding_defaults
from keras_transformer.data.pipeline import has_pieces, truncate_with_end_id
from keras_transformer.decoding.forced import (
    teacher_forced_cross_attention,
    token_log_probabilities,
)
from keras_transformer.decoding.model_decoding import decode
from keras_transformer.decoding_defaults import is_greedy
from keras_transformer.export.aligning import Aligning
from keras_transformer.export.controlled import ControlledTranslation
from keras_transformer.export.sampling import Sampling
from keras_transformer.export.specs import (
    ALPHA,
    BEAM_SIZE,
    IDS,
    NUM_RESULTS,
    SOURCE,
    TARGET,
    TEXT,
    beam_settings,
    traced,
)
from keras_transformer.export.spellings import PhraseSpellings
from keras_transformer.scorings import check_scoring
from keras_transformer.special_ids import END_ID, PAD_ID, START_ID


class Translator(Sampling, ControlledTranslation, Aligning, tf.Module):
    """Text in, text out, with every step a TensorFlow op.

    Tokenization and detokenization are tensorflow-text ops, decoding is a
    `tf.while_loop` over the model's cached `decode_step`; nothing calls
    Python or NumPy at run time, so the module exports as a SavedModel that
    TensorFlow Serving serves (`export_translator`).

    Input rules, the same in every method and for every batch size
    (including 0): text that is not valid UTF-8 is repaired (bad bytes
    become U+FFFD); characters the vocabulary has never seen become the
    unknown piece; a source longer than `max_length - 1` pieces keeps
    its first `max_length - 1` pieces (the end id makes
    `max_length`; the command `translate` splits a longer line before it
    comes here, see `keras_transformer.export.long_inputs`); a source with
    no pieces at all (empty or whitespace only) translates to the empty
    string with score 0. Each item is decoded exactly as it would be alone.
    `score` reads its targets by the same rules (a target keeps its first
    `max_length - 1` pieces, then the end id).

    The decoding settings' defaults are in `keras_transformer.decoding_defaults`.
    The signatures `controlled`, `controlled_beam`, `controlled_nbest` and
    `controlled_sample` take a typed prefix and controls per text
    (`controlled.ControlledTranslation`); `sample` draws
    (`sampling.Sampling`); `align` gives word alignments of given
    translations (`aligning.Aligning`).

    Args:
        model: a trained `keras_transformer.Transformer`.
        tokenizer: the `SubwordTokenizer` it was trained with.
        beam_size: beams of `translate` (4, the paper's).
        alpha: length-penalty exponent of `translate` (0.6, the paper's).
        extra_length: a translation may have up to source length +
            `extra_length` tokens (50, the paper's), capped by
            `max_length`.
        max_length: the most tokens in a source (its end id included), in
            a translation and in a scored target (256); a trained run's is
            its `model.max_length`, the limit it was trained with.
        scoring: how beam search scores and stops in every method, "gnmt"
            or "transformers" (Hugging Face's `generate`, e.g. for an
            imported Marian model; see `keras_transformer.scorings`).

    Raises:
        ValueError: `max_length` is not an int >= 2 (a source needs a piece
            and the end id), or `scoring` is unknown.

    Example:

    >>> import keras_transformer as kt
    >>> from keras_transformer.data import train_tokenizer
    >>> tokenizer = train_tokenizer(["a b c. d e! f g"] * 40, vocab_size=14,
    ...                             byte_fallback=False)
    >>> model = kt.build_transformer(
    ...     kt.TransformerConfig.tiny(tokenizer.vocab_size, d_model=16))
    >>> translator = Translator(model, tokenizer, max_length=8)
    >>> ids = translator.source_ids(["a b c d e f g"])  # 13 pieces
    >>> tuple(ids.shape), int(ids[0, -1])  # the first 7, then the end id
    ((1, 8), 2)
    >>> Translator(model, tokenizer, max_length=1)
    Traceback (most recent call last):
    ...
    ValueError: max_length must be an int >= 2 (a piece and the end id), got 1.
    """

    def __init__(
        self,
        model,
        tokenizer,
        beam_size=decoding_defaults.BEAM_SIZE,
        alpha=decoding_defaults.ALPHA,
        extra_length=decoding_defaults.EXTRA_LENGTH,
        scoring=decoding_defaults.SCORING,
        max_length=decoding_defaults.MAX_LENGTH,
    ):
        super().__init__(name="translator")
        check_scoring(scoring)
        if (
            isinstance(max_length, bool)
            or not isinstance(max_length, numbers.Integral)
            or max_length < 2
        ):
            raise ValueError(
                "max_length must be an int >= 2 (a piece and the end id), got "
                f"{max_length!r}."
            )
        self.model = model
        self.tokenizer = tokenizer
        self.beam_size = beam_size
        self.alpha = alpha
        self.extra_length = extra_length
        self.scoring = scoring
        self.max_length = int(max_length)
        # Saved with an export, so that a loaded one can tell its defaults
        # and how many source pieces it reads (`translate` splits longer);
        # its decoding limit is a constant in its traced signatures.
        self.defaults = {
            "beam_size": tf.Variable(beam_size, dtype=tf.int32, trainable=False),
            "alpha": tf.Variable(alpha, dtype=tf.float32, trainable=False),
        }
        self.phrase_spellings = PhraseSpellings(
            tokenizer, model.config.output_vocab_size
        )
        self.max_source_pieces = tf.Variable(
            self.max_length - 1, dtype=tf.int32, trainable=False
        )
        self._track_samplers()
        self._track_words()

    def source_ids(self, text):
        """Strings (B,) -> int32 encoder inputs (B, S): pieces, end id, padding."""
        pieces = self.tokenizer.tokenize(text)  # (B, None)
        ids = truncate_with_end_id(pieces, self.max_length)  # (B, None)
        return ids.to_tensor(PAD_ID)  # (B, S)

    def target_ids(self, text):
        """Strings (B,) -> int32 forced-decoding targets (B, T), T >= 1:
        pieces, end id, padding, read by the sources' rules."""
        pieces = self.tokenizer.tokenize_target(text)  # (B, None)
        ids = truncate_with_end_id(pieces, self.max_length).to_tensor(PAD_ID)
        short = tf.maximum(1 - tf.shape(ids)[1], 0)  # T >= 1 at batch 0
        return tf.pad(ids, [[0, 0], [0, short]], constant_values=PAD_ID)  # (B, T)

    def forced_inputs(self, source, target):
        """Forced decoding's inputs of string pairs (B,): source ids (B, S),
        target ids (B, T), and the encoder's outputs and padding mask."""
        tf.debugging.assert_equal(
            tf.shape(source), tf.shape(target), "source and target sizes differ"
        )
        source_ids = self.source_ids(source)  # (B, S)
        encoder_outputs, mask = self.model.encode(source_ids)
        return source_ids, self.target_ids(target), encoder_outputs, mask

    def _search(self, source_ids, beam_size, alpha, num_results=1, **options):
        """The `num_results` best outputs: ids (B, K, L), scores (B, K).

        `options`: `decode`'s `sampler`, `controls` or `prefix`."""
        return decode(
            self.model,
            source_ids,
            start_id=START_ID,
            end_id=END_ID,
            beam_size=beam_size,
            alpha=alpha,
            num_results=num_results,
            extra_length=self.extra_length,
            max_length=self.max_length,
            scoring=self.scoring,
            **options,
        )

    @traced(IDS, BEAM_SIZE, ALPHA, NUM_RESULTS)
    def _beam_search(self, source_ids, beam_size, alpha, num_results):
        """The beam search that every beam-searching method calls: traced
        once, an export holds (and a load imports) one copy of its loop."""
        return self._search(source_ids, beam_size, alpha, num_results)

    def _decode(self, source_ids, beam_size, alpha):
        if is_greedy(beam_size):
            ids, scores = self._search(source_ids, 1, alpha)
        else:
            ids, scores = self._beam_search(source_ids, beam_size, alpha, 1)
        return ids[:, 0], scores[:, 0]  # (B, L), (B,)

    def _translate_text(self, text, beam_size, alpha):
        source_ids = self.source_ids(text)  # (B, S)
        ids, scores = self._decode(source_ids, beam_size, alpha)
        return self._texts(source_ids, ids, scores)

    def _texts(self, source_ids, ids, scores):
        nonempty = has_pieces(source_ids)  # (B,)
        translation = tf.where(nonempty, self.tokenizer.detokenize(ids), "")
        return {
            "translation": translation,
            "score": tf.where(nonempty, scores, 0.0),
        }

    @traced(TEXT)
    def translate(self, text):
        """Beam search with the default beam size and alpha.

        Returns:
            {"translation": string (B,), "score": float32 (B,)}.
        """
        return self._translate_text(text, self.beam_size, self.alpha)

    @traced(TEXT)
    def greedy(self, text):
        """Greedy decoding. Returns {"translation", "score"} (score: log-prob)."""
        return self._translate_text(text, 1, 0.0)

    @traced(TEXT, BEAM_SIZE, ALPHA)
    def beam(self, text, beam_size, alpha):
        """Beam search of a chosen width and length-penalty exponent.

        `beam_size` is clipped to [1, 64] and `alpha` to >= 0; `translate`
        is this with the defaults (4 and 0.6 unless set otherwise).

        Returns:
            {"translation": string (B,), "score": float32 (B,)}.
        """
        return self._translate_text(text, *beam_settings(beam_size, alpha))

    @traced(TEXT, BEAM_SIZE, ALPHA)
    def nbest(self, text, beam_size, alpha):
        """Every finished hypothesis of a beam search, best first.

        `beam_size` (clipped to [1, 64]) hypotheses per text, with scores
        as `beam`'s (log-probability over the length penalty); hypothesis
        0 is `beam`'s translation. A text with no pieces gives
        `beam_size` empty hypotheses with score 0.

        Returns:
            {"translations": string (B, K), "scores": float32 (B, K)}.
        """
        beam_size, alpha = beam_settings(beam_size, alpha)
        source_ids = self.source_ids(text)  # (B, S)
        ids, scores = self._beam_search(
            source_ids, beam_size, alpha, beam_size
        )  # (B, K, L), (B, K)
        shape = tf.shape(ids)
        flat = tf.reshape(ids, [shape[0] * shape[1], shape[2]])  # (B * K, L)
        texts = tf.reshape(self.tokenizer.detokenize(flat), shape[:2])  # (B, K)
        nonempty = has_pieces(source_ids)[:, None]  # (B, 1)
        return {
            "translations": tf.where(nonempty, texts, ""),
            "scores": tf.where(nonempty, scores, 0.0),
        }

    @traced(SOURCE, TARGET)
    def score(self, source, target):
        """The log-probability of each target given its source (forced decoding).

        The decoder is teacher-forced on the target's pieces and its end
        id, so `score` is the sum of log-probabilities that greedy decoding
        (and beam search at alpha 0) gives a hypothesis that ends with the
        end id. Targets follow the sources' input rules. A source with no
        pieces translates to nothing: an empty target scores 0, any other
        -inf.

        Returns:
            {"score": float32 (B,), the sum of log-probabilities;
            "tokens": int32 (B,), the target's pieces + 1 (the end id);
            "per_token": float32 (B,), score / tokens}.
        """
        source_ids, target_ids, encoder_outputs, mask = self.forced_inputs(
            source, target
        )
        log_probs = token_log_probabilities(
            self.model, target_ids, encoder_outputs, mask, START_ID
        )  # (B, T)
        tokens = tf.reduce_sum(tf.cast(target_ids != PAD_ID, tf.int32), axis=1)
        empty = tf.where(has_pieces(target_ids), -float("inf"), 0.0)  # (B,)
        scores = tf.where(
            has_pieces(source_ids), tf.reduce_sum(log_probs, axis=1), empty
        )  # (B,)
        return {
            "score": scores,
            "tokens": tokens,
            "per_token": scores / tf.cast(tokens, tf.float32),
        }

    @traced(IDS)
    def translate_ids(self, ids):
        """Token ids in (B, S), 0 for padding -> beam-search ids out (B, L).

        Returns:
            {"ids": int32 (B, L), end id included, then padding;
            "score": float32 (B,)}.
        """
        output_ids, scores = self._decode(ids, self.beam_size, self.alpha)
        return {"ids": output_ids, "score": scores}

    @traced(TEXT)
    def attention(self, text):
        """The default translation with the cross-attention that produced it.

        Decodes as `translate` does (beam search with the defaults), then
        runs the decoder once more, teacher-forced on that output, to read
        the cross-attention of every decoder layer and head: row t of a
        map is how output piece t (the one predicted at step t) attends
        over the source pieces.

        Returns:
            {"translation": string (B,), "score": float32 (B,),
            "source_pieces": string (B, S), "target_pieces": string (B, T),
            "cross_attention": float32 (B, layers, heads, T, S)}; pieces are
            padded with "", and attention rows and columns of padding are 0.
        """
        source_ids = self.source_ids(text)  # (B, S)
        output_ids, scores = self._decode(source_ids, self.beam_size, self.alpha)
        nonempty = has_pieces(source_ids)  # (B,)
        # A source with no pieces translates to nothing, as in `translate`.
        output_ids = tf.where(nonempty[:, None], output_ids, PAD_ID)  # (B, T)
        encoder_outputs, mask = self.model.encode(source_ids)
        attention = teacher_forced_cross_attention(
            self.model, output_ids, encoder_outputs, mask, START_ID
        )  # (B, layers, h, T, S)
        return {
            "translation": self.tokenizer.detokenize(output_ids),
            "score": tf.where(nonempty, scores, 0.0),
            "source_pieces": self._pieces(source_ids),
            "target_pieces": self._pieces(output_ids),
            "cross_attention": attention,
        }

    def _pieces(self, ids):
        pieces = self.tokenizer.id_to_piece(ids)
        return tf.where(ids == PAD_ID, "", pieces)

    def signatures(self):
        """The serving signatures, by name, as `tf.saved_model.save` takes them."""
        return {
            "serving_default": self.translate,
            "greedy": self.greedy,
            "beam": self.beam,
            "ids": self.translate_ids,
            "attention": self.attention,
            "nbest": self.nbest,
            "score": self.score,
            "align": self.align,
            "sample": self.sample,
            "controlled": self.controlled,
            "controlled_beam": self.controlled_beam,
            "controlled_nbest": self.controlled_nbest,
            "controlled_sample": self.controlled_sample,
        }
