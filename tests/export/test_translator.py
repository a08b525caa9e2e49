"""The in-process Translator: it translates, shows its attention, takes any input."""

import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.data import train_tokenizer
from keras_transformer.decoding import decode
from keras_transformer.decoding_defaults import MAX_LENGTH as MAX_LENGTH_DEFAULT
from keras_transformer.export import Translator, export_translator
from keras_transformer.special_ids import END_ID
from tests.fixtures.reversal import LETTERS, MAX_LENGTH, reversal_pairs

pytestmark = pytest.mark.slow

BAD_INPUTS = {
    "empty": b"",
    "whitespace": b" \t\n  ",
    "too_long": " ".join(LETTERS * 3).encode(),  # 48 words, one piece each
    "invalid_utf8": b"\xff\xfe c \xc3 d \xed\xa0\x80 e",
    "unseen": "z \u00e4 \u4e2d \U0001f642 a".encode(),
    "control": b"a\x00b c",
    "plain": b"a b c",
}
TEXT_SIGNATURES = ["serving_default", "greedy", "beam", "attention"]


def call(signatures, name, texts):
    """Runs signature `name` on `texts` (bytes or str) -> dict of numpy arrays."""
    inputs = {"text": tf.constant(texts, tf.string, shape=[len(texts)])}
    if name == "beam":
        inputs.update(beam_size=tf.constant(3), alpha=tf.constant(0.6))
    return {key: value.numpy() for key, value in signatures[name](**inputs).items()}


def strings(array):
    return [text.decode("utf-8") for text in array]


def exact_rate(translations, pairs):
    return np.mean(
        [text == target for text, (_, target) in zip(translations, pairs, strict=True)]
    )


def assert_outputs_equal(outputs, expected, atol=1e-4):
    """Equal strings and ids, scores and attention within `atol`."""
    assert outputs.keys() == expected.keys()
    for key, value in expected.items():
        if value.dtype.kind == "f":
            np.testing.assert_allclose(outputs[key], value, atol=atol, err_msg=key)
        else:
            np.testing.assert_array_equal(outputs[key], value, err_msg=key)


def assert_row_equals_alone(batch, row, alone):
    """Row `row` of a batch's outputs equals the outputs of the item alone.

    Batched (B, T, S) and (B, S) outputs are padded to the longest item, so
    the row must be the item's output padded with zeros or "".
    """
    assert batch.keys() == alone.keys()
    for key, value in alone.items():
        value, padded = np.asarray(value[0]), np.array(batch[key][row])  # a copy
        front = tuple(slice(0, size) for size in value.shape)
        assert_outputs_equal({key: padded[front]}, {key: value})
        padding = 0 if padded.dtype.kind in "fiub" else b""
        padded[front] = padding
        assert np.all(padded == padding), (key, row)


def test_greedy_beam_and_translate_reverse_held_out_text(translator, held_out):
    texts = tf.constant([source for source, _ in held_out])
    results = {
        "greedy": translator.greedy(texts),
        "translate": translator.translate(texts),
        "beam": translator.beam(texts, tf.constant(2), tf.constant(0.6)),
    }
    for name, result in results.items():
        rate = exact_rate(strings(result["translation"].numpy()), held_out)
        assert rate >= 0.9, (name, rate)
        assert np.all(result["score"].numpy() <= 0), name


def test_beam_of_size_one_without_length_penalty_is_greedy(translator, held_out):
    texts = tf.constant([source for source, _ in held_out[:50]])
    greedy = translator.greedy(texts)
    beam = translator.beam(texts, tf.constant(1), tf.constant(0.0))
    np.testing.assert_array_equal(beam["translation"], greedy["translation"])
    np.testing.assert_allclose(beam["score"], greedy["score"], atol=1e-4)


def test_attention_of_a_reversal_is_the_mirror(translator, held_out):
    texts = [source for source, _ in held_out[:50]]
    result = call(translator.signatures(), "attention", texts)
    attention = result["cross_attention"]  # (B, layers, heads, T, S)
    assert attention.shape[:3] == (len(texts), 2, 4)
    default = translator.translate(tf.constant(texts))
    np.testing.assert_array_equal(result["translation"], default["translation"])
    np.testing.assert_allclose(result["score"], default["score"], atol=1e-4)
    alignment = attention[:, -1].mean(axis=1)  # last layer, heads averaged
    mirrored = total = 0
    for row, text in enumerate(texts):
        words = text.split()
        n = len(words)  # source pieces without the end piece
        source_pieces = list(result["source_pieces"][row])
        assert source_pieces[: n + 1] == [f"▁{w}".encode() for w in words] + [b"</s>"]
        target_pieces = result["target_pieces"][row]
        is_output = target_pieces != b""
        length = int(is_output.sum())  # output tokens, the end token included
        assert is_output[:length].all() and target_pieces[length - 1] == b"</s>"
        rows = attention[row, :, :, :length]  # every layer and head
        np.testing.assert_allclose(rows.sum(axis=-1), 1, atol=1e-5)
        assert not np.any(attention[row, :, :, length:])  # padded output rows
        assert not np.any(attention[row, ..., n + 1 :])  # padded source columns
        for t in range(min(n, length - 1)):  # output words, not the end token
            mirrored += int(np.argmax(alignment[row, t]) == n - 1 - t)
            total += 1
    assert total > 0 and mirrored / total >= 0.8, mirrored / total


def test_translate_ids_equals_decoding_the_same_ids(translator, held_out):
    source_ids = translator.source_ids(tf.constant([s for s, _ in held_out[:40]]))
    result = translator.translate_ids(source_ids)
    ids, scores = decode(
        translator.model,
        source_ids,
        beam_size=translator.beam_size,
        alpha=translator.alpha,
        extra_length=translator.extra_length,
        max_length=translator.max_length,
    )
    np.testing.assert_array_equal(result["ids"], ids[:, 0])
    np.testing.assert_allclose(result["score"], scores[:, 0], atol=1e-4)
    assert np.all(np.any(result["ids"].numpy() == END_ID, axis=1))


@pytest.mark.parametrize("name", TEXT_SIGNATURES)
def test_bad_input_decodes_as_it_would_alone(signatures, name):
    texts = list(BAD_INPUTS.values())
    batch = call(signatures, name, texts)
    for value in batch.values():
        assert value.shape[0] == len(texts)
    strings(batch["translation"])  # valid UTF-8
    for row, text in enumerate(texts):
        assert_row_equals_alone(batch, row, call(signatures, name, [text]))


@pytest.mark.parametrize("name", TEXT_SIGNATURES)
def test_bad_input_follows_the_documented_rules(signatures, name):
    def result(key):
        return call(signatures, name, [BAD_INPUTS[key]])

    for key in ("empty", "whitespace"):  # no pieces: "" (with score 0)
        nothing = result(key)
        assert nothing["translation"].tolist() == [b""]
        assert nothing["score"].tolist() == [0.0]
        if name == "attention":
            assert nothing["source_pieces"].tolist() == [[b"</s>"]]
            assert not np.any(nothing["target_pieces"] != b"")
            assert not np.any(nothing["cross_attention"])
    # Too long: the first max_length - 1 pieces, then the end piece.
    kept = " ".join(BAD_INPUTS["too_long"].decode().split()[: MAX_LENGTH - 1])
    assert_outputs_equal(result("too_long"), call(signatures, name, [kept]))
    # Invalid UTF-8: the bad bytes become U+FFFD.
    repaired = BAD_INPUTS["invalid_utf8"].decode("utf-8", errors="replace")
    assert_outputs_equal(result("invalid_utf8"), call(signatures, name, [repaired]))
    if name == "attention":  # unseen characters are the unknown piece
        assert b"<unk>" in result("unseen")["source_pieces"][0].tolist()
        assert result("too_long")["source_pieces"].shape == (1, MAX_LENGTH)


@pytest.mark.parametrize("name", [*TEXT_SIGNATURES, "ids"])
def test_a_batch_of_zero_gives_empty_outputs(signatures, name):
    if name == "ids":
        result = signatures["ids"](ids=tf.zeros([0, 0], tf.int32))
        result = {key: value.numpy() for key, value in result.items()}
    else:
        result = call(signatures, name, [])
    for value in result.values():
        assert value.shape[0] == 0


def test_a_thousand_mixed_inputs_decode_as_they_would_alone(signatures):
    rng = np.random.default_rng(2)
    bad = list(BAD_INPUTS.values())
    texts = []
    for _ in range(1000):
        if rng.random() < 0.1:
            texts.append(bad[rng.integers(len(bad))])
        else:
            words = rng.choice(list(LETTERS), rng.integers(1, 30))
            texts.append(" ".join(str(word) for word in words).encode())
    batch = call(signatures, "greedy", texts)
    assert batch["translation"].shape == batch["score"].shape == (1000,)
    strings(batch["translation"])
    for row in rng.choice(1000, 12, replace=False):
        assert_row_equals_alone(
            {key: value[row : row + 1] for key, value in batch.items()},
            0,
            call(signatures, "greedy", [texts[row]]),
        )


def never_ending_model():
    """(model, tokenizer): a model whose every output token is "a"."""
    # No `keras.utils.set_random_seed` here: it would delete the SentencePiece
    # resource of the session's tokenizer (see conftest).
    tokenizer = train_tokenizer(
        [source for source, _ in reversal_pairs(200, seed=0)],
        vocab_size=40,
        byte_fallback=False,
    )
    config = kt.TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=16, d_ff=16, shared_embeddings=False
    )
    model = kt.build_transformer(config)
    kernel, bias = model.output_projection.get_weights()
    bias[:] = 0.0
    bias[int(tokenizer.tokenize(["a"])[0, 0])] = 1e4  # logits say "a", never end
    model.output_projection.set_weights([kernel * 0, bias])
    return model, tokenizer


def test_max_length_caps_outputs_and_sources_here_and_in_the_export(tmp_path):
    model, tokenizer = never_ending_model()
    translator = Translator(model, tokenizer, beam_size=2, extra_length=9, max_length=4)
    texts = ["b", " ".join(LETTERS)]  # 2 and 17 source ids
    exported = tf.saved_model.load(export_translator(translator, tmp_path, "t", 1))
    assert int(exported.max_source_pieces.numpy()) == 3
    for signatures in (translator.signatures(), exported.signatures):
        for name in ("greedy", "serving_default"):
            result = call(signatures, name, texts)
            assert result["translation"].tolist() == [b"a a a a"] * 2, name
        pieces = call(signatures, "attention", texts)["source_pieces"]
        assert pieces.shape == (2, 4)  # 3 pieces and the end id
    assert Translator(model, tokenizer).max_length == MAX_LENGTH_DEFAULT


@pytest.mark.parametrize("max_length", [1, 0, 2.5, True, None])
def test_a_bad_max_length_is_a_value_error(max_length):
    model, tokenizer = never_ending_model()
    with pytest.raises(
        ValueError, match=f"max_length must be an int >= 2.*{max_length}"
    ):
        Translator(model, tokenizer, max_length=max_length)


def test_an_empty_source_translates_to_nothing_in_every_method():
    """Even from a model that never emits the end token by itself."""
    model, tokenizer = never_ending_model()
    translator = Translator(model, tokenizer, beam_size=2, extra_length=3)
    texts = ["", "  ", "b"]
    # "b" and its end id: 2 source ids, so 2 + extra_length tokens of "a".
    greedy = call(translator.signatures(), "greedy", texts)
    assert greedy["translation"][2] == b"a a a a a"
    for name in ("greedy", "beam", "attention"):  # `translate` is `beam`
        result = call(translator.signatures(), name, texts)
        assert result["translation"][:2].tolist() == [b"", b""], name
        assert result["score"][:2].tolist() == [0.0, 0.0], name
        if name == "attention":
            assert not np.any(result["target_pieces"][:2] != b"")
            assert not np.any(result["cross_attention"][:2])
