"""A Marian checkpoint imported computes what transformers computed.

The references were written by tests/fixtures/make_marian_fixtures.py
(transformers + torch); these tests read only those files.
"""

import json
import os

import numpy as np
import pytest

from keras_transformer.marian import checkpoint, load_marian, vocabulary

pytestmark = pytest.mark.tensorflow  # the Marian import builds TensorFlow runs

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "fixtures", "marian")
VARIANTS = ("shared_swish", "shared_relu", "separate_swish")
_LOADED = {}


def reference_of(variant):
    """What transformers computed for `variant`, with its generation max_length."""
    folder = os.path.join(FIXTURES, variant)
    with open(os.path.join(folder, "reference.json"), encoding="utf-8") as file:
        reference = json.load(file)
    generation = checkpoint.read_json(folder, checkpoint.GENERATION_CONFIG)
    reference["max_length"] = generation["max_length"]
    return reference


def loaded(variant):
    """(model, tokenizer, generation, reference, folder), loaded once a variant.

    Only for this module: its tests never seed, and a seed (the CLI's `train`)
    discards tokenizers made before it (see `SubwordTokenizer`).
    """
    if variant not in _LOADED:
        folder = os.path.join(FIXTURES, variant)
        _LOADED[variant] = (*load_marian(folder), reference_of(variant), folder)
    return _LOADED[variant]


def orders(folder):
    """Marian's ids in our order, of the source and the target vocabulary."""
    source = checkpoint.read_json(folder, checkpoint.VOCAB)
    target = source
    if os.path.exists(os.path.join(folder, checkpoint.TARGET_VOCAB)):
        target = checkpoint.read_json(folder, checkpoint.TARGET_VOCAB)
    return vocabulary.marian_order(source), vocabulary.marian_order(target)


def to_ours(ids, order):
    """Marian's ids -> ours."""
    table = np.empty(len(order), "int64")
    table[order] = np.arange(1, len(order) + 1)
    return table[np.asarray(ids, "int64")]


@pytest.mark.parametrize("variant", VARIANTS)
def test_logits_equal_transformers(variant):
    model, _, _, reference, folder = loaded(variant)
    source_order, target_order = orders(folder)
    source_pad = int(source_order[0])
    inputs = np.array(reference["input_ids"])
    encoder_inputs = np.where(inputs == source_pad, 0, to_ours(inputs, source_order))
    labels = np.array(reference["labels"])
    start = target_order[0]
    decoder_inputs = to_ours(
        np.concatenate([np.full((len(labels), 1), start), labels[:, :-1]], 1),
        target_order,
    )
    logits = np.array(
        model({"encoder_inputs": encoder_inputs, "decoder_inputs": decoder_inputs})
    )
    # Our column k + 1 is Marian's id order[k]; Marian's <pad> is banned.
    marian_logits = logits[..., 1:][..., np.argsort(target_order)]
    expected = np.load(os.path.join(folder, "logits.npy"))
    real = labels != start
    kept = np.arange(expected.shape[-1]) != start
    np.testing.assert_allclose(
        marian_logits[real][:, kept], expected[real][:, kept], atol=1e-4
    )
    # Padding and start (Marian's <pad>) are never generated.
    assert (logits[..., :2] < logits[..., 2:].min(axis=-1, keepdims=True)).all()


@pytest.mark.parametrize("variant", VARIANTS)
def test_tokenizer_gives_transformers_ids(variant):
    _, tokenizer, _, reference, folder = loaded(variant)
    source_order, _ = orders(folder)
    ids = tokenizer.tokenize(reference["sources"]).to_list()
    expected = [
        to_ours(row[:-1], source_order).tolist() for row in reference["source_ids"]
    ]
    assert ids == expected


def reference_limit(reference):
    """The most tokens generate() makes: its max_length less the start."""
    return reference["max_length"] - 1


def check_outputs(ours, expected, limit, end_id):
    """Counts of outputs equal to `expected`; a reference that reached the
    limit ends with the end token transformers forces there
    (forced_eos_token_id), so its other tokens must be our first ones."""
    equal = 0
    for row, want in zip(ours, expected, strict=True):
        if len(want) == limit and want[-1] == end_id and row[:limit] != want:
            equal += row[: limit - 1] == want[:-1]
        else:
            equal += row == want
    return equal


def our_ids(ids):
    """Decoder outputs (B, L) -> lists up to and with the end id."""
    rows = []
    for row in np.asarray(ids).tolist():
        rows.append(row[: row.index(2) + 1] if 2 in row else [i for i in row if i])
    return rows


def decoded_and_expected(variant, name, **settings):
    """Our outputs for the reference's sources, decoded with `settings` up to
    generate()'s limit, and the reference's `name` outputs, both in our ids."""
    from keras_transformer.decoding import decode

    model, tokenizer, _, reference, folder = loaded(variant)
    _, target_order = orders(folder)
    source = tokenizer.tokenize(reference["sources"])
    source = np.concatenate(
        [source.to_tensor().numpy(), np.zeros((len(reference["sources"]), 1), "int32")],
        axis=1,
    )
    lengths = (source != 0).sum(axis=1)
    source[np.arange(len(source)), lengths] = 2  # the end id
    limit = reference_limit(reference)
    ids, _ = decode(model, source, extra_length=10**4, max_length=limit, **settings)
    expected = [to_ours(row, target_order).tolist() for row in reference[name]["ids"]]
    return our_ids(ids[:, 0]), expected, limit


@pytest.mark.parametrize("variant", VARIANTS)
def test_greedy_output_is_transformers(variant):
    ours, expected, limit = decoded_and_expected(variant, "greedy", beam_size=1)
    assert check_outputs(ours, expected, limit, end_id=2) == len(expected)


def test_beam_4_outputs_are_transformers_under_their_scoring():
    # generate(num_beams=4) with Marian's length_penalty 1.0; the issue's
    # target is 95 % of the outputs identical (docs/experiments.md).
    equal = total = 0
    for variant in VARIANTS:
        ours, expected, limit = decoded_and_expected(
            variant, "beam4", beam_size=4, alpha=1.0, scoring="transformers"
        )
        equal += check_outputs(ours, expected, limit, end_id=2)
        total += len(expected)
    assert equal >= 0.95 * total, f"{equal} of {total}"


def check_strings(ours, reference, name):
    """Our strings equal transformers' (for greedy, a prefix of ours where
    it hit its length limit, which ours, limited by the source length, may
    pass; beam search with a larger limit may choose another hypothesis
    there, so those are not compared); an empty source translates to "" by
    the translator's rule."""
    limit = reference_limit(reference)
    for source, text, want, ids in zip(
        reference["sources"],
        ours,
        reference[name]["text"],
        reference[name]["ids"],
        strict=True,
    ):
        if not source.strip():
            assert text == ""
        elif len(ids) == limit:
            if name == "greedy":
                assert text.startswith(want[: len(want) - 1]), (text, want)
        else:
            assert text == want


@pytest.mark.parametrize("variant", VARIANTS)
def test_translator_strings_are_transformers(variant):
    from keras_transformer.export import Translator

    model, tokenizer, _, reference, _ = loaded(variant)
    translator = Translator(model, tokenizer)
    texts = translator.greedy(reference["sources"])["translation"].numpy()
    check_strings([t.decode() for t in texts], reference, "greedy")


def test_translator_beam_search_takes_the_transformers_scoring():
    from keras_transformer.decoding import decode
    from keras_transformer.export import Translator

    model, tokenizer, _, reference, _ = loaded("shared_swish")
    translator = Translator(model, tokenizer, alpha=1.0, scoring="transformers")
    source_ids = translator.source_ids(reference["sources"])
    result = translator.translate_ids(source_ids)
    ids, scores = decode(
        model,
        source_ids,
        beam_size=4,
        alpha=1.0,
        extra_length=translator.extra_length,
        max_length=translator.max_length,
        scoring="transformers",
    )
    np.testing.assert_array_equal(result["ids"], ids[:, 0])
    np.testing.assert_allclose(result["score"], scores[:, 0], atol=1e-5)
    gnmt = Translator(model, tokenizer, alpha=1.0)  # kept: its methods need it
    gnmt_ids = gnmt.translate_ids(source_ids)["ids"].numpy()
    assert (gnmt_ids != result["ids"].numpy()).any()  # the setting matters here
    with pytest.raises(ValueError, match="scoring must be one of"):
        Translator(model, tokenizer, scoring="average")


@pytest.mark.slow
def test_tf_serving_loader_returns_transformers_strings(tmp_path):
    from keras_transformer.export import Translator, export_translator
    from tests.export.test_saved_model import TF1_SESSION_SCRIPT, run_python

    model, tokenizer, _, reference, _ = loaded("separate_swish")
    translator = Translator(model, tokenizer, beam_size=1, alpha=0.0)
    path = export_translator(translator, tmp_path / "export", version=1)
    texts_file = tmp_path / "texts.json"
    texts_file.write_text(json.dumps(reference["sources"]))
    result = run_python(tmp_path, TF1_SESSION_SCRIPT, path, texts_file)
    check_strings(result["translation"], reference, "greedy")


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["shared_swish", "separate_swish"])
def test_ctranslate2_export_translates_as_the_translator(variant, tmp_path):
    pytest.importorskip("ctranslate2")
    from keras_transformer.export import (
        CTranslate2Translator,
        Translator,
        export_ctranslate2,
    )

    model, tokenizer, _, reference, _ = loaded(variant)
    translator = Translator(model, tokenizer, beam_size=1, alpha=0.0)
    path = export_ctranslate2(translator, tmp_path / "ct2")
    texts = CTranslate2Translator(path).translate(reference["sources"])
    expected = translator.greedy(reference["sources"])["translation"].numpy()
    assert texts == [text.decode("utf-8") for text in expected]


@pytest.mark.slow
def test_a_separate_target_vocabulary_heals_a_prefix_and_samples_under_it():
    """A prefix cut inside a word leaves pieces of the target vocabulary (the
    logits' axis, not the source's) to complete it, in beam search and in
    `controlled_sample`."""
    from keras_transformer.export import Translator
    from tests.export.test_controlled import controlled, strings

    model, tokenizer, _, reference, _ = loaded("separate_swish")
    assert model.config.output_vocab_size != model.config.vocab_size
    translator = Translator(model, tokenizer, beam_size=2, alpha=0.0)
    signatures = translator.signatures()
    texts = reference["sources"][:3]
    greedy = strings(signatures["greedy"](text=np.array(texts))["translation"].numpy())
    prefixes = [text[: len(text) // 2 + 1].rstrip() for text in greedy]
    draw = dict(top_k=5, top_p=1.0, temperature=1.0, seed=1)
    for sampling in (None, draw):
        result = controlled(signatures, texts, sampling=sampling, prefix=prefixes)
        for prefix, text in zip(prefixes, strings(result["translation"]), strict=True):
            assert text.startswith(prefix), (prefix, text)


def repeated_ngrams(tokens, size):
    grams = [tuple(tokens[i : i + size]) for i in range(len(tokens) - size + 1)]
    return len(grams) - len(set(grams))


def test_the_repetition_of_an_imported_model_goes_with_the_controls():
    """transformers' own greedy outputs of this fixture repeat a piece
    until the limit (an OPUS-MT model's failure, here from random
    weights); ours do too, and with no_repeat_ngram_size 2 no bigram
    repeats, and a repetition penalty makes fewer pieces repeat."""
    from keras_transformer.decoding import NoRepeatNgram, RepetitionPenalty

    plain, expected, _ = decoded_and_expected("shared_relu", "greedy", beam_size=1)
    assert all(repeated_ngrams(ids, 2) for ids in expected)
    assert all(repeated_ngrams(ids, 2) for ids in plain)
    banned, _, _ = decoded_and_expected(
        "shared_relu", "greedy", beam_size=1, controls=[NoRepeatNgram(2)]
    )
    assert [repeated_ngrams(ids, 2) for ids in banned] == [0] * len(banned)
    penalized, _, _ = decoded_and_expected(
        "shared_relu", "greedy", beam_size=1, controls=[RepetitionPenalty(3.0)]
    )
    repeats = [
        sum(repeated_ngrams(ids, 1) for ids in rows) for rows in (plain, penalized)
    ]
    assert repeats[1] < repeats[0]
