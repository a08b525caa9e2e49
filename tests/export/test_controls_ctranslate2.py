"""The repetition and length controls, and a target prefix, give
CTranslate2's greedy tokens for each option CTranslate2 defines the same way.

Two models, each exported to CTranslate2: an untrained one, which repeats
itself up to its length limit (the repetition options have something to
change), and the trained reversal translator, which ends early and emits
words the suppressed sequence names (the minimum length and the
suppression have something to change). CTranslate2 decodes the same
sources with the option of the same meaning.
"""

import os
import random

import pytest
import sentencepiece
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.decoding import decode
from keras_transformer.decoding.controls import (
    MinLength,
    NoRepeatNgram,
    RepetitionPenalty,
)
from keras_transformer.decoding.token_masks import SuppressSequences
from keras_transformer.export import Translator, export_ctranslate2
from keras_transformer.special_ids import END_ID, UNKNOWN_ID

ctranslate2 = pytest.importorskip("ctranslate2")
pytestmark = pytest.mark.slow

EXTRA_LENGTH = 6
WORDS = 5  # every source: one limit, one CTranslate2 call


@pytest.fixture(scope="module")
def models(translator, held_out, tmp_path_factory):
    """name -> (translator, its CTranslate2 model), untrained and trained."""
    random.seed(0)
    untrained = Translator(
        kt.build_transformer(translator.model.config),
        translator.tokenizer,
        extra_length=EXTRA_LENGTH,
        max_length=translator.max_length,
    )
    trained = Translator(
        translator.model,
        translator.tokenizer,
        extra_length=EXTRA_LENGTH,
        max_length=translator.max_length,
    )
    folder = tmp_path_factory.mktemp("ct2")
    return {
        name: (model, export_ctranslate2(model, folder / name))
        for name, model in (("untrained", untrained), ("trained", trained))
    }


@pytest.fixture(scope="module")
def sources(held_out):
    return [source for source, _ in held_out if len(source.split()) == WORDS][:16]


def options(banned):
    """name -> (CTranslate2's options, our controls, the model it must
    change) for each option CTranslate2 defines as we do; `banned` is a
    sequence of two (piece, id) pairs."""
    return {
        "repetition_penalty": (
            {"repetition_penalty": 1.8},
            [RepetitionPenalty(1.8)],
            "untrained",
        ),
        "no_repeat_ngram_size": (
            {"no_repeat_ngram_size": 2},
            [NoRepeatNgram(2)],
            "untrained",
        ),
        "min_decoding_length": (
            {"min_decoding_length": WORDS + 2},
            [MinLength(WORDS + 2)],
            "trained",
        ),
        "suppress_sequences": (
            {"suppress_sequences": [[piece for piece, _ in banned]]},
            [SuppressSequences([[token for _, token in banned]])],
            "trained",
        ),
        # Neither model emits the unknown piece here: equality only.
        "disable_unk": (
            {"disable_unk": True},
            [SuppressSequences([[UNKNOWN_ID]])],
            None,
        ),
    }


def greedy_ids(translator, sources, **settings):
    """Our greedy tokens of each source, up to the end token, under `decode`'s
    `settings` (controls, a prefix)."""
    ids, _ = decode(
        translator.model,
        translator.source_ids(tf.constant(sources)),
        beam_size=1,
        extra_length=EXTRA_LENGTH,
        max_length=translator.max_length,
        **settings,
    )
    return [cut_at_end(row) for row in ids.numpy()[:, 0].tolist()]


def ctranslate2_ids(path, sources, options):
    """CTranslate2's greedy tokens of each source under `options`."""
    pieces = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(path, "tokenizer.model")
    )
    results = ctranslate2.Translator(str(path)).translate_batch(
        [pieces.encode(text, out_type=str) for text in sources],
        beam_size=1,
        max_decoding_length=WORDS + 1 + EXTRA_LENGTH,  # as `decode`'s limit
        max_input_length=0,
        **options,
    )
    return [
        [pieces.piece_to_id(piece) for piece in result.hypotheses[0]]
        for result in results
    ]


def test_greedy_tokens_equal_ctranslate2s_for_each_shared_option(models, sources):
    free = {name: greedy_ids(model, sources) for name, (model, _) in models.items()}
    translator = models["trained"][0]
    first_two = free["trained"][0][:2]  # suppressed: it must change that output
    banned = [
        (translator.tokenizer.id_to_piece(t).numpy().decode(), t) for t in first_two
    ]
    for option, (ct2_options, controls, must_change) in options(banned).items():
        for name, (model, path) in models.items():
            ours = greedy_ids(model, sources, controls=controls)
            assert ours == ctranslate2_ids(path, sources, ct2_options), (option, name)
            if name == must_change:
                assert ours != free[name], option


def cut_at_end(tokens):
    """`tokens` up to their end token, or all of them."""
    return tokens[: tokens.index(END_ID)] if END_ID in tokens else tokens


def test_greedy_tokens_after_a_prefix_equal_ctranslate2s_target_prefix(models, sources):
    """Per source a prefix of 0 to 3 pieces, taken from the trained model's
    output of another source, so that it changes this one's; the limit
    counts the prefix, as CTranslate2's `max_decoding_length` does."""
    words = greedy_ids(models["trained"][0], sources)
    prefixes = [words[(row + 1) % len(words)][: row % 4] for row in range(len(words))]
    width = max(map(len, prefixes))
    padded = tf.constant([p + [0] * (width - len(p)) for p in prefixes], tf.int32)
    for name, (model, path) in models.items():
        ours = greedy_ids(model, sources, prefix=padded)
        to_piece = model.tokenizer.id_to_piece
        target_prefix = [[to_piece(t).numpy().decode() for t in p] for p in prefixes]
        theirs = ctranslate2_ids(path, sources, {"target_prefix": target_prefix})
        assert ours == theirs, name
        assert all(row[: len(p)] == p for row, p in zip(ours, prefixes, strict=True))
        assert ours != greedy_ids(model, sources), name
