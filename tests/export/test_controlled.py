"""The controlled signatures: a typed prefix kept verbatim, per-row controls,
each row as it would be alone (TF Serving's batcher mixes rows), in process
and from the SavedModel."""

import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.data import train_tokenizer
from keras_transformer.export.control_settings import MAX_NO_REPEAT_NGRAM
from keras_transformer.export.text_prefix import TypedPrefix
from keras_transformer.special_ids import END_ID, UNKNOWN_ID
from tests.fixtures.reversal import MAX_LENGTH

pytestmark = pytest.mark.slow

NEUTRAL = dict(
    prefix="",
    repetition_penalty=1.0,
    no_repeat_ngram_size=0,
    min_length=0,
    banned=[""],  # no phrase, for every text
    required=[""],
)
PHRASES = ("banned", "required")  # a list of phrases a text


def controlled(signatures, texts, beam=None, sampling=None, disable_unk=False, **rows):
    """`controlled` (`controlled_beam` with `beam` = (size, alpha),
    `controlled_sample` with `sampling` = its settings by name) on `texts`;
    each setting one value for all rows, or a list of one a row."""
    settings = {**NEUTRAL, **rows, "disable_unk": disable_unk}
    inputs = {"text": tf.constant(texts, tf.string)}
    for name, value in settings.items():
        per_row = isinstance(value, list)
        if name in PHRASES:  # a list of phrases for all, or a list per text
            per_row = isinstance(value[0], list)
        values = value if per_row else [value] * len(texts)
        if name in PHRASES:  # phrases per text, padded with ""
            width = max(map(len, values))
            values = [row + [""] * (width - len(row)) for row in values]
        inputs[name] = tf.constant(values)
    name = "controlled"
    if beam is not None:
        name = "controlled_beam"
        inputs.update(beam_size=tf.constant(beam[0]), alpha=tf.constant(beam[1]))
    if sampling is not None:
        name = "controlled_sample"
        inputs.update({key: tf.constant(value) for key, value in sampling.items()})
    outputs = signatures[name](**inputs)
    return {key: value.numpy() for key, value in outputs.items()}


def strings(array):
    return [text.decode("utf-8") for text in array]


@pytest.fixture(scope="module")
def sources(held_out):
    return [source for source, _ in held_out[:12]]


def test_neutral_controls_give_the_plain_signatures_translations(signatures, sources):
    plain = signatures["serving_default"](text=tf.constant(sources))
    result = controlled(signatures, sources)
    assert strings(result["translation"]) == strings(plain["translation"].numpy())
    np.testing.assert_allclose(result["score"], plain["score"], atol=1e-5)
    greedy = signatures["greedy"](text=tf.constant(sources))
    result = controlled(signatures, sources, beam=(1, 0.0))
    assert strings(result["translation"]) == strings(greedy["translation"].numpy())
    np.testing.assert_allclose(result["score"], greedy["score"], atol=1e-5)


def test_the_translation_begins_with_the_prefix_exactly_as_typed(signatures, held_out):
    pairs = held_out[:8]
    prefixes = []
    for index, (_, target) in enumerate(pairs):
        words = target.split()
        typed = " ".join(words[: 1 + index % 3])
        # Spacing that the tokenizer normalizes away, and a trailing space.
        spaced = ["  " + typed, typed.replace(" ", "  "), typed + " "]
        prefixes.append(spaced[index % 3])
    # A prefix that is not the reversal: the search completes it anyway.
    prefixes[-1] = "p p p "
    texts = [source for source, _ in pairs]
    for beam in (None, (1, 0.0)):
        result = controlled(signatures, texts, beam=beam, prefix=prefixes)
        translations = strings(result["translation"])
        for prefix, translation in zip(prefixes, translations, strict=True):
            assert translation.startswith(prefix), (prefix, translation)
        assert not result["prefix_cut"].any()
    # Where the prefix is the reversal's start, the rest follows the reversal.
    result = controlled(signatures, texts[:1], prefix=pairs[0][1].split()[0] + " ")
    assert strings(result["translation"]) == [pairs[0][1]]


def test_every_hypothesis_of_the_n_best_list_begins_with_the_prefix(
    signatures, sources
):
    prefixes = ["a ", "b c", "", "d e f "]
    rows = {name: value for name, value in NEUTRAL.items() if name != "prefix"}
    inputs = {"text": tf.constant(sources[:4]), "prefix": tf.constant(prefixes)}
    for name, value in {**rows, "disable_unk": False}.items():
        inputs[name] = tf.constant([value] * 4)
    inputs.update(beam_size=tf.constant(3), alpha=tf.constant(0.6))
    nbest = signatures["controlled_nbest"](**inputs)
    best = signatures["controlled_beam"](**inputs)
    translations = [strings(row) for row in nbest["translations"].numpy()]
    assert [row[0] for row in translations] == strings(best["translation"].numpy())
    for prefix, row in zip(prefixes, translations, strict=True):
        assert len(row) == 3 and all(text.startswith(prefix) for text in row)
    scores = nbest["scores"].numpy()
    assert (scores[:, :-1] >= scores[:, 1:]).all()  # best first


def test_a_prefix_longer_than_the_limit_is_cut_and_reported(signatures, sources):
    long_prefix = " ".join(["a"] * (MAX_LENGTH + 4))
    result = controlled(signatures, sources[:2], prefix=[long_prefix, "b "])
    assert result["prefix_cut"].tolist() == [True, False]
    translation = strings(result["translation"])[0]
    assert translation.split() == ["a"] * (MAX_LENGTH - 1)  # no room for more


def test_no_repeat_ngram_and_min_length_hold_in_every_output(signatures):
    texts = ["a a b a a", "c c c", "d e d e d e"]
    free = strings(controlled(signatures, texts)["translation"])
    assert any(len(set(text.split())) < len(text.split()) for text in free)
    result = controlled(signatures, texts, no_repeat_ngram_size=1)
    for text in strings(result["translation"]):
        assert len(set(text.split())) == len(text.split()), text
    result = controlled(signatures, texts, min_length=10)
    for text in strings(result["translation"]):
        assert len(text.split()) >= 10, text  # a piece a word


def test_each_row_is_translated_as_it_would_be_alone(signatures, sources):
    """What TF Serving's batcher relies on: rows with different settings."""
    rows = dict(
        prefix=["", "a ", "b", "", "c d ", ""],
        repetition_penalty=[1.0, 1.5, 1.0, 3.0, 1.0, 1.2],
        no_repeat_ngram_size=[0, 2, 0, 1, 3, 0],
        min_length=[0, 0, 9, 0, 2, 12],
        disable_unk=[False, True, False, True, False, False],
        banned=[["", ""], ["a", "b c"], ["", ""], ["d", ""], ["", ""], ["e f", "g"]],
        required=[["a"], [""], ["b c"], ["e"], [""], ["h"]],
    )
    texts = sources[:6]
    for beam in (None, (1, 0.0), (3, 1.0)):
        batch = controlled(signatures, texts, beam=beam, **rows)
        for index, text in enumerate(texts):
            one = {name: [values[index]] for name, values in rows.items()}
            alone = controlled(signatures, [text], beam=beam, **one)
            assert strings(alone["translation"]) == strings(
                batch["translation"][index : index + 1]
            )
            np.testing.assert_allclose(alone["score"], batch["score"][index], atol=1e-5)


def test_banned_phrases_never_appear_and_other_rows_are_unchanged(signatures):
    texts = ["a b c d", "c d e", "a c a c"]
    free = strings(controlled(signatures, texts)["translation"])
    assert all("c" in text.split() for text in free)
    banned = [["c"], [""], ["a c", "c a"]]
    result = strings(controlled(signatures, texts, banned=banned)["translation"])
    assert "c" not in result[0].split()
    assert result[1] == free[1]
    words = result[2].split()
    pairs = list(zip(words, words[1:], strict=False))
    assert ("a", "c") not in pairs and ("c", "a") not in pairs


def test_required_phrases_appear_where_they_fit(signatures):
    """Terms the reversal would not write appear; a row whose terms do
    not fit its limit says so; other rows are unchanged."""
    texts = ["a b c", "d e f", "g h i", "a b c d"]
    free = strings(controlled(signatures, texts)["translation"])
    assert free == ["c b a", "f e d", "i h g", "d c b a"]
    too_long = [" ".join("abcdefghi"), " ".join("jklmnopjk")]  # 18 > 16 pieces
    required = [["k", ""], ["", ""], ["m n", "o"], too_long]
    for beam in (None, (1, 0.0), (3, 0.6)):
        result = controlled(signatures, texts, beam=beam, required=required)
        words = [text.split() for text in strings(result["translation"])]
        assert "k" in words[0]
        assert words[1] == free[1].split()
        assert "o" in words[2] and "m n" in " ".join(words[2])
        np.testing.assert_array_equal(result["required_met"], [1, 1, 1, 0])


@pytest.mark.parametrize(
    "phrases, message",
    [
        (dict(required=["a"], banned=["a "]), "both required and banned"),
        (dict(required=["q"]), "pieces the vocabulary lacks"),
        (dict(required=[" ".join("abcdefghijklmnopa")]), "more than 16 pieces"),
    ],
)
def test_impossible_phrases_fail_with_a_message(signatures, phrases, message):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        controlled(signatures, ["a b"], **phrases)


def test_controlled_sample_draws_as_sample_under_its_controls(signatures, sources):
    """At rest its draws are `sample`'s (the same seed); a prefix is kept,
    a banned word never drawn, and a required phrase is refused."""
    texts = sources[:6]
    # At temperature 2, draws that differ from greedy decoding's.
    draw = dict(top_k=4, top_p=1.0, temperature=2.0, seed=3)
    plain = signatures["sample"](
        text=tf.constant(texts), **{key: tf.constant(v) for key, v in draw.items()}
    )
    at_rest = controlled(signatures, texts, sampling=draw)
    assert strings(at_rest["translation"]) == strings(plain["translation"].numpy())
    np.testing.assert_allclose(at_rest["score"], plain["score"], rtol=1e-5)
    prefixes = ["a ", "k j", "", "", "", ""]
    result = controlled(signatures, texts, sampling=draw, prefix=prefixes, banned=["c"])
    translations = strings(result["translation"])
    assert translations[0].startswith("a ") and translations[1].startswith("k j")
    assert all("c" not in text.split() for text in translations), translations
    with pytest.raises(tf.errors.InvalidArgumentError, match="need beam search"):
        controlled(signatures, texts, sampling=draw, required=["a"])


def test_a_text_without_pieces_translates_to_its_prefix(signatures):
    result = controlled(signatures, ["", "  "], prefix=["", "p o"])
    assert strings(result["translation"]) == ["", "p o"]
    np.testing.assert_array_equal(result["score"], [0.0, 0.0])


@pytest.mark.parametrize(
    "setting, message",
    [
        (dict(repetition_penalty=0.0), "repetition_penalty must be > 0"),
        (dict(no_repeat_ngram_size=-1), "no_repeat_ngram_size must be >= 0"),
        (
            dict(no_repeat_ngram_size=MAX_NO_REPEAT_NGRAM + 1),
            f"no_repeat_ngram_size must be <= {MAX_NO_REPEAT_NGRAM}",
        ),
        (dict(min_length=-2), "min_length must be >= 0"),
        (dict(prefix=["a"]), "prefix needs one value per text"),
    ],
)
def test_bad_values_fail_with_a_message_that_names_them(
    signatures, sources, setting, message
):
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        controlled(signatures, sources[:2], **setting)


@pytest.fixture(scope="module")
def words_tokenizer():
    texts = ["the house is big", "a household", "the hose", "he has a horse"]
    return train_tokenizer(texts * 40, vocab_size=40, byte_fallback=False)


def test_typed_prefix_forces_whole_words_and_heals_the_last_one(words_tokenizer):
    """Against a reference over the vocabulary's strings."""
    vocab = [piece for piece in words_tokenizer.pieces()[1]]
    typed = TypedPrefix(words_tokenizer, len(vocab), max_pieces=3)
    texts = ["the ho", "the house ", "", "ho", "a house is big", "hoz"]
    inputs = {key: value.numpy() for key, value in typed(tf.constant(texts)).items()}
    for row, text in enumerate(texts):
        pieces = words_tokenizer.tokenize([text]).to_list()[0]
        cut = len(pieces) > 3
        pieces = pieces[:3]
        assert inputs["cut"][row] == cut
        unknown = bool(pieces) and pieces[-1] == UNKNOWN_ID
        heal = bool(pieces) and not text.endswith(" ") and not cut and not unknown
        forced = pieces[:-1] if heal else pieces
        assert [int(i) for i in inputs["ids"][row] if i] == forced, text
        if not pieces or cut:
            assert inputs["at"][row] == -1
            continue
        assert inputs["at"][row] == len(forced)
        wanted = vocab[pieces[-1]] if heal else "" if unknown else "\u2581"
        expected = [piece.startswith(wanted) for piece in vocab]
        if not heal:
            expected[END_ID] = True
        assert inputs["allowed"][row].tolist() == expected, text
    # "ho" heals to every piece that begins with it: the word may go on.
    assert inputs["allowed"][3].sum() > 1
    # "z" is unknown: forced, and anything may follow.
    assert inputs["ids"][5].tolist().count(UNKNOWN_ID) == 1
    assert inputs["allowed"][5].all()
