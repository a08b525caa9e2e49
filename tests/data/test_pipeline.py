import numpy as np
import pytest
import tensorflow as tf

import keras_transformer as kt
from keras_transformer.data import (
    load_ding_pairs,
    make_dataset,
    mix_pairs,
    model_example,
    pairs_to_dataset,
    train_tokenizer,
)
from keras_transformer.data.pipeline import batches_in_pass
from keras_transformer.export import Translator
from keras_transformer.export.specs import TEXT


@pytest.fixture(scope="module")
def setting():
    pairs = load_ding_pairs()["train"][:3000]
    tokenizer = train_tokenizer([text for pair in pairs for text in pair], 800)
    return pairs, tokenizer


def batches(setting, **kwargs):
    pairs, tokenizer = setting
    return list(make_dataset(pairs_to_dataset(pairs), tokenizer, **kwargs))


def test_batches_respect_the_token_budget_and_lengths(setting):
    result = batches(setting, max_length=24, tokens_per_batch=512, seed=0)
    for inputs, labels in result:
        for tensor in (inputs["encoder_inputs"], inputs["decoder_inputs"], labels):
            assert tensor.dtype == tf.int32
            assert tensor.shape[1] <= 24
            assert tensor.shape[0] * tensor.shape[1] <= 512
    total = sum(int(labels.shape[0]) for _, labels in result)
    assert total == len(setting[0])


def test_labels_are_decoder_inputs_shifted_by_one(setting):
    for inputs, labels in batches(setting, max_length=32, tokens_per_batch=1024):
        decoder_inputs = inputs["decoder_inputs"].numpy()
        labels = labels.numpy()
        real = decoder_inputs[:, 1:] != 0
        np.testing.assert_array_equal(decoder_inputs[:, 1:][real], labels[:, :-1][real])
        np.testing.assert_array_equal(decoder_inputs != 0, labels != 0)
        assert np.all(decoder_inputs[:, 0] == 1)
        lengths = (labels != 0).sum(axis=1)
        assert np.all(labels[np.arange(len(labels)), lengths - 1] == 2)  # end id
        encoder = inputs["encoder_inputs"].numpy()
        encoder_lengths = (encoder != 0).sum(axis=1)
        assert np.all(encoder[np.arange(len(encoder)), encoder_lengths - 1] == 2)


def test_the_translator_cuts_sources_as_training_does(setting):
    pairs, tokenizer = setting
    max_length = 8
    config = kt.TransformerConfig.tiny(
        tokenizer.vocab_size, d_model=16, d_ff=32, num_heads=2
    )
    model = kt.build_transformer(config)
    translator = Translator(model, tokenizer, max_length=max_length)
    texts = [source for source, _ in pairs[:40]] + ["", "  "]
    source_ids = tf.function(translator.source_ids, input_signature=[TEXT])
    served = source_ids(tf.constant(texts)).numpy()  # as in the SavedModel
    cut = 0
    for text, row in zip(texts, served, strict=True):
        pieces = tokenizer.tokenize([text])[0]
        cut += len(pieces) >= max_length
        trained = model_example(pieces, pieces, max_length)[0]["encoder_inputs"]
        trained = trained.numpy()
        np.testing.assert_array_equal(row[: len(trained)], trained)
        assert not row[len(trained) :].any()
    assert cut > 0


def test_round_trip_through_the_pipeline(setting):
    pairs, tokenizer = setting
    inputs, labels = next(
        iter(make_dataset(pairs_to_dataset(pairs[:1]), tokenizer, shuffle_buffer=0))
    )
    assert (
        tokenizer.detokenize(inputs["encoder_inputs"]).numpy()[0].decode()
        == (pairs[0][0])
    )
    assert tokenizer.detokenize(labels).numpy()[0].decode() == pairs[0][1]


def test_drop_long_drops_instead_of_truncating(setting):
    kept = batches(setting, max_length=10, tokens_per_batch=200, drop_long=True)
    truncated = batches(setting, max_length=10, tokens_per_batch=200)
    count = sum(int(labels.shape[0]) for _, labels in kept)
    assert 0 < count < sum(int(labels.shape[0]) for _, labels in truncated)


def test_same_seed_same_order(setting):
    first = batches(setting, max_length=16, tokens_per_batch=256, seed=3)
    second = batches(setting, max_length=16, tokens_per_batch=256, seed=3)
    for (a, _), (b, _) in zip(first, second, strict=True):
        np.testing.assert_array_equal(a["encoder_inputs"], b["encoder_inputs"])


def test_batch_multiple_rounds_every_batch_down_to_a_multiple(setting):
    pairs, tokenizer = setting
    dataset = make_dataset(
        pairs_to_dataset(pairs),
        tokenizer,
        max_length=24,
        tokens_per_batch=512,
        seed=0,
        repeat=True,
        batch_multiple=3,
    )
    sizes = [int(labels.shape[0]) for _, labels in dataset.take(40)]
    assert all(size % 3 == 0 for size in sizes) and len(set(sizes)) > 1
    # for `tf.distribute`: every worker keeps its share of each batch
    policy = dataset.options().experimental_distribute.auto_shard_policy
    assert policy == tf.data.experimental.AutoShardPolicy.DATA


def test_batch_multiple_can_exceed_a_budget_of_one_long_pair(setting):
    pairs, tokenizer = setting
    long_pairs = [pair for pair in pairs if len(pair[0].split()) > 12][:8]
    result = list(
        make_dataset(
            pairs_to_dataset(long_pairs),
            tokenizer,
            max_length=12,
            tokens_per_batch=12,
            shuffle_buffer=0,
            batch_multiple=2,
        )
    )
    assert [int(labels.shape[0]) for _, labels in result] == [2] * 4
    with pytest.raises(ValueError, match="batch_multiple must be >= 1, got 0"):
        batches(setting, batch_multiple=0)


def test_budget_smaller_than_a_sequence_is_rejected(setting):
    with pytest.raises(ValueError, match="tokens_per_batch=8"):
        batches(setting, max_length=16, tokens_per_batch=8)


def test_sampled_segmentations_detokenize_to_the_pairs(setting):
    pairs, tokenizer = setting
    pairs = pairs[:200]
    seen = {}
    for _ in range(2):
        dataset = make_dataset(
            pairs_to_dataset(pairs),
            tokenizer,
            max_length=512,  # no truncation
            shuffle_buffer=0,
            sampling_alpha=0.2,
        )
        for inputs, labels in dataset:
            sources = tokenizer.detokenize(inputs["encoder_inputs"]).numpy()
            targets = tokenizer.detokenize(labels).numpy()
            for source, target, ids in zip(
                sources, targets, labels.numpy(), strict=True
            ):
                assert (source.decode(), target.decode()) in pairs
                seen.setdefault(target, set()).add(tuple(ids[ids != 0]))
    assert any(len(segmentations) > 1 for segmentations in seen.values())


def test_mix_pairs_keeps_every_main_pair_once_and_draws_the_extra_share():
    main = [(f"satz {i}", f"sentence {i}") for i in range(2000)]
    extra = [(f"wort {i}", f"word {i}") for i in range(300)]

    def mixed():
        return mix_pairs(pairs_to_dataset(main), pairs_to_dataset(extra), 0.2, seed=1)

    def as_list(dataset):
        return [(s.decode(), t.decode()) for s, t in dataset.as_numpy_iterator()]

    dataset = mixed()
    passes = [as_list(dataset), as_list(dataset)]
    for pairs in passes:
        assert [pair for pair in pairs if pair[0].startswith("satz")] == main
        drawn = [pair for pair in pairs if pair[0].startswith("wort")]
        assert set(drawn) <= set(extra)
        assert 0.17 < len(drawn) / len(pairs) < 0.23
        assert len(set(drawn)) == 300  # the extra pairs repeat when they run out
    assert passes[0] != passes[1]  # a new sample of extra pairs on every pass
    assert as_list(mixed()) == passes[0]  # the same seed, the same stream


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1])
def test_mix_pairs_rejects_fractions_outside_zero_one(fraction):
    pairs = pairs_to_dataset([("a", "b")])
    with pytest.raises(ValueError, match="extra_fraction"):
        mix_pairs(pairs, pairs, fraction)


@pytest.mark.parametrize(
    "settings",
    [
        {"max_length": 24, "tokens_per_batch": 512},
        {"max_length": 96, "tokens_per_batch": 1000, "batch_multiple": 3},
    ],
)
def test_batches_in_pass_are_the_batches_make_dataset_makes(setting, settings):
    pairs, tokenizer = setting
    made = make_dataset(
        pairs_to_dataset(pairs), tokenizer, shuffle_buffer=0, **settings
    )
    counted = batches_in_pass(pairs_to_dataset(pairs), tokenizer, **settings)
    assert counted == sum(1 for _ in made)


def test_batches_in_pass_of_a_sample_estimate_the_whole(setting):
    pairs, tokenizer = setting
    settings = {"max_length": 32, "tokens_per_batch": 1024}
    whole = batches_in_pass(pairs_to_dataset(pairs), tokenizer, **settings)
    quarter = pairs_to_dataset(pairs).shuffle(3000, seed=1).take(750)
    estimate = batches_in_pass(quarter, tokenizer, scale=4.0, **settings)
    assert abs(estimate - whole) <= 0.05 * whole


def test_aligned_pairs_carry_their_links_to_the_pieces(setting):
    """Triples give `{"logits", "alignment"}` targets: word i of each source
    linked to word i of its target, seen piece by piece after batching and
    truncation, checked against `alignment.word_positions`."""
    pairs, tokenizer = setting
    pairs = pairs[:300]
    lines = [
        " ".join(f"{i}-{i}" for i in range(min(len(s.split()), len(t.split()))))
        for s, t in pairs
    ]
    triples = tf.data.Dataset.from_tensor_slices(
        tuple(map(list, zip(*pairs, strict=True))) + (lines,)
    )
    source_roles, target_roles = (
        kt.alignment.piece_roles(pieces) for pieces in tokenizer.pieces()
    )
    linked = 0
    for inputs, targets in make_dataset(
        triples, tokenizer, max_length=8, tokens_per_batch=256, shuffle_buffer=0
    ):
        source_words = np.asarray(
            kt.alignment.word_positions(inputs["encoder_inputs"], source_roles)
        )  # (B, S)
        target_words = np.asarray(
            kt.alignment.word_positions(targets["logits"], target_roles)
        )  # (B, T)
        expected = (target_words[:, :, None] == source_words[:, None, :]) & (
            target_words[:, :, None] >= 0
        )  # (B, T, S)
        np.testing.assert_array_equal(targets["alignment"], expected)
        linked += int(expected.sum())
    assert linked > 300
