import keras
import numpy as np
import pytest

from keras_transformer.layers import EncoderBlock, PositionalEmbedding
from tests.layer_test_case import check_output_shapes, run_layer_test

INPUTS = np.random.default_rng(0).normal(size=(2, 6, 16)).astype("float32")
PADDING = np.array([[1] * 6, [1, 1, 1, 0, 0, 0]], bool)


def test_layer_conventions(tmp_path):
    run_layer_test(
        EncoderBlock,
        {
            "num_heads": 4,
            "d_ff": 32,
            "dropout": 0.1,
            "activation_dropout": 0.1,
            "norm_first": True,
        },
        {"inputs": INPUTS, "padding_mask": PADDING},
        expected_output_shape=(2, 6, 16),
        expected_num_trainable_weights=14,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_wiring_matches_section_3_1(norm_first):
    block = EncoderBlock(num_heads=4, d_ff=32, norm_first=norm_first)
    outputs = np.array(block(INPUTS, padding_mask=PADDING))
    attention = block.self_attention
    norm_1 = block.self_attention_layer_norm
    norm_2 = block.feed_forward_layer_norm
    x = INPUTS
    if norm_first:
        y = x + attention(norm_1(x), norm_1(x), padding_mask=PADDING)
        expected = y + block.feed_forward(norm_2(y))
    else:
        y = norm_1(x + attention(x, x, padding_mask=PADDING))
        expected = norm_2(y + block.feed_forward(y))
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_activation_dropout_drops_inner_activations_in_training_only():
    block = EncoderBlock(num_heads=4, d_ff=32, activation_dropout=0.5)
    plain = EncoderBlock(num_heads=4, d_ff=32)
    plain(INPUTS)
    block(INPUTS)
    plain.set_weights(block.get_weights())
    np.testing.assert_allclose(block(INPUTS), plain(INPUTS), atol=1e-6)
    dropped = np.array(block(INPUTS, training=True))
    assert not np.allclose(dropped, plain(INPUTS, training=True), atol=1e-3)
    assert block.feed_forward.dropout == 0.5


def test_appended_padding_does_not_change_real_positions():
    block = EncoderBlock(num_heads=4, d_ff=32)
    short = np.array(block(INPUTS[:1, :3], padding_mask=np.ones((1, 3), bool)))
    padded = np.array(block(INPUTS[:1], padding_mask=PADDING[1:]))
    np.testing.assert_allclose(padded[:, :3], short, atol=1e-5)


def test_keras_mask_is_the_padding_mask_fallback():
    ids = keras.Input((None,), dtype="int32")
    embedding = PositionalEmbedding(10, 16)
    block = EncoderBlock(num_heads=4, d_ff=32)
    model = keras.Model(ids, block(embedding(ids)))
    tokens = np.array([[3, 4, 5, 0, 0]])
    explicit = block(embedding(tokens), padding_mask=tokens != 0)
    np.testing.assert_allclose(model(tokens), explicit, atol=1e-6)


def test_returns_attention_scores():
    block = EncoderBlock(num_heads=4, d_ff=32)
    _, scores = block(INPUTS, padding_mask=PADDING, return_attention_scores=True)
    assert tuple(scores.shape) == (2, 4, 6, 6)
    np.testing.assert_allclose(np.sum(scores, axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.array(scores)[1, :, :, 3:], 0.0, atol=1e-7)


def test_compute_output_shape_gives_the_attention_scores_shape():
    block = EncoderBlock(num_heads=4, d_ff=32)
    arguments = {"return_attention_scores": True}
    check_output_shapes(block, {"inputs": INPUTS, "padding_mask": PADDING}, arguments)


def test_width_not_divisible_by_heads_raises():
    with pytest.raises(ValueError, match="d_model=16 must be divisible by num_heads=3"):
        EncoderBlock(num_heads=3, d_ff=32)(INPUTS)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0, "d_ff": 8}, "num_heads"),
        ({"num_heads": 2, "d_ff": 8, "dropout": 1.0}, "dropout"),
        ({"num_heads": 2, "d_ff": 8, "attention_dropout": -1}, "attention_dropout"),
        ({"num_heads": 2, "d_ff": 8, "activation_dropout": 1.0}, "activation_dropout"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EncoderBlock(**kwargs)
