import numpy as np
import pytest

from keras_transformer.layers import DecoderBlock
from tests.layer_test_case import run_layer_test

RNG = np.random.default_rng(0)
TARGET = RNG.normal(size=(2, 5, 16)).astype("float32")
SOURCE = RNG.normal(size=(2, 7, 16)).astype("float32")
SOURCE_PADDING = np.array([[1] * 7, [1, 1, 1, 1, 0, 0, 0]], bool)


def test_layer_conventions(tmp_path):
    run_layer_test(
        DecoderBlock,
        {"num_heads": 4, "d_ff": 32, "dropout": 0.1},
        {
            "decoder_sequence": TARGET,
            "encoder_sequence": SOURCE,
            "encoder_padding_mask": SOURCE_PADDING,
        },
        expected_output_shape=(2, 5, 16),
        expected_num_trainable_weights=22,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_future_tokens_never_change_past_outputs(norm_first):
    block = DecoderBlock(num_heads=4, d_ff=32, norm_first=norm_first)
    changed = TARGET.copy()
    changed[:, 3:] = RNG.normal(size=changed[:, 3:].shape)
    np.testing.assert_allclose(
        block(changed, SOURCE)[:, :3], block(TARGET, SOURCE)[:, :3], atol=1e-5
    )


def test_source_padding_never_changes_outputs():
    block = DecoderBlock(num_heads=4, d_ff=32)
    changed = SOURCE.copy()
    changed[1, 4:] = 50.0
    np.testing.assert_allclose(
        block(TARGET, changed, encoder_padding_mask=SOURCE_PADDING),
        block(TARGET, SOURCE, encoder_padding_mask=SOURCE_PADDING),
        atol=1e-5,
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_steps_equal_one_full_pass(norm_first):
    block = DecoderBlock(num_heads=4, d_ff=32, norm_first=norm_first)
    full = np.array(block(TARGET, SOURCE, encoder_padding_mask=SOURCE_PADDING))
    cross_cache = block.compute_cross_attention_cache(SOURCE)
    empty = np.zeros((2, 4, 9, 4), "float32")
    self_cache = (empty, empty)
    for t in range(5):
        output, self_cache = block(
            TARGET[:, t : t + 1],
            encoder_padding_mask=SOURCE_PADDING,
            self_attention_cache=self_cache,
            cross_attention_cache=cross_cache,
            cache_index=t,
        )
        np.testing.assert_allclose(output[:, 0], full[:, t], atol=1e-5)


def test_returns_cross_attention_scores():
    block = DecoderBlock(num_heads=4, d_ff=32)
    _, scores = block(
        TARGET,
        SOURCE,
        encoder_padding_mask=SOURCE_PADDING,
        return_attention_scores=True,
    )
    assert tuple(scores.shape) == (2, 4, 5, 7)
    np.testing.assert_allclose(np.sum(scores, axis=-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.array(scores)[1, :, :, 4:], 0.0, atol=1e-7)


def test_needs_a_source():
    with pytest.raises(ValueError, match="encoder_sequence"):
        DecoderBlock(num_heads=4, d_ff=32)(TARGET)


def test_width_not_divisible_by_heads_raises():
    with pytest.raises(ValueError, match="divisible by num_heads=5"):
        DecoderBlock(num_heads=5, d_ff=32)(TARGET, SOURCE)
