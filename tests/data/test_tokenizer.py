import io

import numpy as np
import pytest
import sentencepiece
import tensorflow as tf

from keras_transformer.data import SubwordTokenizer, load_ding_pairs, train_tokenizer
from keras_transformer.data.tokenizer import (
    SAMPLED_THREADS,
    check_vocabulary,
    reservoir_sample,
)


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


def test_a_tokenizer_made_before_seeding_still_tokenizes(tokenizer):
    """`tf.random.set_seed` clears TensorFlow's eager kernel cache, which held
    tensorflow-text's model resource; ours is named and survives it."""
    import keras

    texts = tf.constant(["Guten Morgen!", "Wie geht es dir?"])
    traced = tf.function(tokenizer.tokenize)
    before = tokenizer.tokenize(texts).to_list()
    assert traced(texts).to_list() == before
    keras.utils.set_random_seed(0)
    assert tokenizer.tokenize(texts).to_list() == before  # eager
    assert traced(texts).to_list() == before  # in a traced function
    assert tokenizer.detokenize(tokenizer.tokenize(texts)).numpy().tolist() == [
        b"Guten Morgen!",
        b"Wie geht es dir?",
    ]


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


def test_reservoir_sample_keeps_a_short_stream_whole_and_in_order():
    assert reservoir_sample(iter(range(7)), 7) == (list(range(7)), 7)
    assert reservoir_sample(iter(range(3)), 10, seed=5) == ([0, 1, 2], 3)


def test_reservoir_sample_is_seeded_and_uniform():
    sample, read = reservoir_sample(range(10_000), 100, seed=3)
    assert read == 10_000 and len(set(sample)) == 100
    assert sample == reservoir_sample(range(10_000), 100, seed=3)[0]
    assert sample != reservoir_sample(range(10_000), 100, seed=4)[0]
    kept = np.zeros(100)
    for seed in range(2000):
        kept[reservoir_sample(range(100), 10, seed)[0]] += 1
    assert kept.sum() == 20_000
    assert kept.min() > 150 and kept.max() < 250  # 200 each expected


def test_reservoir_sample_holds_only_the_sample():
    live = {"now": 0, "most": 0}

    class Item:
        def __init__(self):
            live["now"] += 1
            live["most"] = max(live["most"], live["now"])

        def __del__(self):
            live["now"] -= 1

    stream = (Item() for _ in range(50_000))
    sample, read = reservoir_sample(stream, 20)
    assert read == 50_000 and len(sample) == 20
    assert live["most"] <= 22  # the sample, the item read and the one before


@pytest.fixture
def seen_by_sentencepiece(monkeypatch):
    """What `train_tokenizer` gives SentencePiece: its sentences and threads."""
    seen = {}
    train = sentencepiece.SentencePieceTrainer.train

    def recording(sentence_iterator, **kwargs):
        seen["sentences"] = list(sentence_iterator)
        seen["threads"] = kwargs["num_threads"]
        return train(sentence_iterator=iter(seen["sentences"]), **kwargs)

    monkeypatch.setattr(sentencepiece.SentencePieceTrainer, "train", recording)
    return seen


def test_a_corpus_that_fits_the_sample_trains_as_before(seen_by_sentencepiece):
    """All sentences in their order, with one thread: the vocabulary of a
    corpus of Ding's size is the one it always was."""
    texts = [text for pair in load_ding_pairs()["train"][:500] for text in pair]
    texts.insert(3, "  ")  # empty sentences are left out
    tokenizer = train_tokenizer((text for text in texts), 400, sample_size=1000)
    assert seen_by_sentencepiece == {
        "sentences": [text for text in texts if text.strip()],
        "threads": 1,
    }
    assert tokenizer.model == train_tokenizer(texts, 400).model


def test_a_larger_corpus_trains_on_a_sample_only(seen_by_sentencepiece):
    texts = [f"Satz {n} und noch ein Wort {n % 7}" for n in range(3000)]
    read = []
    stream = (read.append(text) or text for text in texts)  # one pass, lazily
    tokenizer = train_tokenizer(stream, 60, byte_fallback=False, sample_size=200)
    sentences = seen_by_sentencepiece["sentences"]
    assert len(read) == 3000 and len(sentences) == 200 == len(set(sentences))
    assert set(sentences) <= set(texts) and sentences != texts[:200]
    assert seen_by_sentencepiece["threads"] == SAMPLED_THREADS
    again = train_tokenizer(texts, 60, byte_fallback=False, sample_size=200)
    assert again.model == tokenizer.model  # the same sample and threads


def test_pairs_train_on_sources_then_targets_of_a_sample_of_pairs(
    seen_by_sentencepiece,
):
    pairs = [(f"Quelle {n} hier", f"target {n} here") for n in range(600)]
    dataset = tf.data.Dataset.from_tensor_slices(
        tuple(map(list, zip(*pairs, strict=True)))
    )
    train_tokenizer(dataset, 60, byte_fallback=False, sample_size=1200)
    sources, targets = map(list, zip(*pairs, strict=True))
    assert seen_by_sentencepiece["sentences"] == sources + targets
    assert seen_by_sentencepiece["threads"] == 1
    train_tokenizer(dataset, 60, byte_fallback=False, sample_size=100)
    sentences = seen_by_sentencepiece["sentences"]
    assert len(sentences) == 100
    assert seen_by_sentencepiece["threads"] == SAMPLED_THREADS
    sampled = [sentence.split()[1] for sentence in sentences]
    assert sampled[:50] == sampled[50:]  # each sampled pair's two sides
    assert sentences[:50] == [f"Quelle {n} hier" for n in sampled[:50]]


def plain_sentencepiece_model(**settings):
    """A model trained with SentencePiece's defaults (unk 0, bos 1, eos 2, no
    padding), or the settings given."""
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(["a b c d e f g"] * 10),
        model_writer=model,
        vocab_size=12,
        hard_vocab_limit=False,
        minloglevel=2,
        **settings,
    )
    return model.getvalue()


def test_check_vocabulary_refuses_models_without_the_reserved_ids(tmp_path):
    with pytest.raises(ValueError) as error:
        check_vocabulary(plain_sentencepiece_model(), "plain.model")
    assert str(error.value) == (
        "plain.model does not reserve ids 0 padding, 1 start, 2 end, 3 unknown "
        "(it has padding -1, start 1, end 2, unknown 0; -1 is none): train it with"
        " SentencePiece's --pad_id=0 --bos_id=1 --eos_id=2 --unk_id=3, or with "
        "keras_transformer.data.train_tokenizer."
    )
    with pytest.raises(ValueError, match="^the SentencePiece model does not reserve"):
        SubwordTokenizer(plain_sentencepiece_model())
    with pytest.raises(ValueError, match="^notes.txt is not a SentencePiece model"):
        check_vocabulary(b"some notes", "notes.txt")
    path = tmp_path / "plain.model"
    path.write_bytes(plain_sentencepiece_model())
    with pytest.raises(ValueError, match=f"^{path} does not reserve"):
        SubwordTokenizer.load(path)
    fitting = plain_sentencepiece_model(pad_id=0, bos_id=1, eos_id=2, unk_id=3)
    assert check_vocabulary(fitting) == SubwordTokenizer(fitting).vocab_size


def test_a_dataset_of_sentences_trains_on_them_in_order(seen_by_sentencepiece):
    texts = [f"Wort {n}" for n in range(5000)]
    dataset = tf.data.Dataset.from_tensor_slices(texts)
    train_tokenizer(dataset, 30, byte_fallback=False, sample_size=6000)
    assert seen_by_sentencepiece["sentences"] == texts  # across read batches
