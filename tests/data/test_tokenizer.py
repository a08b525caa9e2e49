import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.data import SubwordTokenizer, load_ding_pairs, train_tokenizer


@pytest.fixture(scope="module")
def tokenizer():
    pairs = load_ding_pairs()["train"][:4000]
    return train_tokenizer([text for pair in pairs for text in pair], vocab_size=1000)


def test_reserved_ids(tokenizer):
    pieces = tokenizer.id_to_piece(tf.constant([0, 1, 2, 3])).numpy()
    assert list(pieces) == [b"<pad>", b"<s>", b"</s>", b"<unk>"]
    assert (tokenizer.pad_id, tokenizer.start_id, tokenizer.end_id) == (0, 1, 2)
    assert tokenizer.unknown_id == 3
    assert tokenizer.vocab_size == 1000


def test_round_trip_keeps_case_and_punctuation():
    pairs = load_ding_pairs()["test"][:300]
    texts = [text for pair in pairs for text in pair]
    tokenizer = train_tokenizer(
        [text for pair in load_ding_pairs()["train"][:4000] for text in pair], 1000
    )
    ids = tokenizer.tokenize(texts)
    assert int(tf.reduce_min(ids.flat_values)) > 3  # no reserved id
    restored = [text.decode() for text in tokenizer.detokenize(ids).numpy()]
    assert restored == texts


def test_detokenize_drops_padding_start_and_end(tokenizer):
    ids = tokenizer.tokenize(["Guten Morgen!"]).to_tensor()
    framed = tf.concat([[[1]], ids, [[2, 0, 0]]], axis=1)
    assert tokenizer.detokenize(framed).numpy()[0] == b"Guten Morgen!"


def test_unseen_characters_are_spelled_as_bytes_and_bad_bytes_dropped(tokenizer):
    ids = tokenizer.tokenize([b"\xff kaputt", "\u2603 \u65e5\u672c"])
    texts = tokenizer.detokenize(ids).numpy()
    assert texts[0].decode() == "kaputt"  # U+FFFD, then dropped by normalisation
    assert texts[1].decode() == "\u2603 \u65e5\u672c"
    assert 3 not in ids.flat_values.numpy()


def test_without_byte_fallback_unseen_characters_are_unknown():
    tokenizer = train_tokenizer(["a b c d e"] * 10, 20, byte_fallback=False)
    assert 3 in tokenizer.tokenize(["a \u2603"]).flat_values.numpy()


def test_empty_inputs(tokenizer):
    ids = tokenizer.tokenize(["", "   "])
    assert ids.row_lengths().numpy().tolist() == [0, 0]
    assert tokenizer.detokenize(tf.zeros((0, 4), tf.int32)).shape == (0,)


def test_save_and_load(tokenizer, tmp_path):
    path = tmp_path / "vocab" / "tokenizer.model"
    tokenizer.save(path)
    loaded = SubwordTokenizer.load(path)
    text = ["Das ist ein Test."]
    np.testing.assert_array_equal(
        loaded.tokenize(text).to_tensor(), tokenizer.tokenize(text).to_tensor()
    )
    with pytest.raises(FileNotFoundError, match="tokenizer model"):
        SubwordTokenizer.load(tmp_path / "missing.model")


def test_training_is_deterministic():
    texts = [text for pair in load_ding_pairs()["train"][:1000] for text in pair]
    assert train_tokenizer(texts, 600).model == train_tokenizer(texts, 600).model


def test_too_small_a_vocabulary_is_a_value_error():
    texts = [text for pair in load_ding_pairs()["train"][:1000] for text in pair]
    with pytest.raises(ValueError, match="300-piece vocabulary"):
        train_tokenizer(texts, 300)


@pytest.mark.parametrize(
    "kwargs, message",
    [({"vocab_size": 3}, "vocab_size"), ({"model_type": "char"}, "model_type")],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        train_tokenizer(["a b c"], **{"vocab_size": 100, **kwargs})


def test_sampling_draws_different_segmentations_of_the_same_text(tokenizer):
    texts = [text for pair in load_ding_pairs()["test"][:200] for text in pair]
    sampler = tokenizer.sampling(0.3)
    first, second = sampler.tokenize(texts), sampler.tokenize(texts)
    most_likely = tokenizer.tokenize(texts)
    assert [t.decode() for t in tokenizer.detokenize(first).numpy()] == texts
    assert first.to_list() != second.to_list()
    assert first.to_list() != most_likely.to_list()
    # the most likely segmentation is the shortest on average
    assert np.mean(first.row_lengths()) > np.mean(most_likely.row_lengths())
    assert tokenizer.sampling_alpha is None and sampler.sampling_alpha == 0.3


def test_sharper_sampling_stays_closer_to_the_most_likely_segmentation(tokenizer):
    texts = [text for pair in load_ding_pairs()["test"][:200] for text in pair]
    lengths = [
        np.mean(tokenizer.sampling(alpha).tokenize(texts).row_lengths())
        for alpha in (0.1, 1.0)
    ]
    most_likely = np.mean(tokenizer.tokenize(texts).row_lengths())
    assert lengths[0] > lengths[1] >= most_likely


@pytest.mark.parametrize("alpha", [0, -0.5])
def test_sampling_alpha_must_be_positive(tokenizer, alpha):
    with pytest.raises(ValueError, match="sampling_alpha"):
        tokenizer.sampling(alpha)
