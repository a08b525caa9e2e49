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
@pytest.mark.parametrize("cache_update", ["write", "append"])
def test_cached_steps_equal_one_full_pass(norm_first, cache_update):
    block = DecoderBlock(num_heads=4, d_ff=32, norm_first=norm_first)
    full = np.array(block(TARGET, SOURCE, encoder_padding_mask=SOURCE_PADDING))
    cross_cache = block.compute_cross_attention_cache(SOURCE)
    empty = np.zeros((2, 4, 9 if cache_update == "write" else 0, 4), "float32")
    self_cache = (empty, empty)
    for t in range(5):
        output, self_cache = block(
            TARGET[:, t : t + 1],
            encoder_padding_mask=SOURCE_PADDING,
            self_attention_cache=self_cache,
            cross_attention_cache=cross_cache,
            cache_index=t,
            cache_update=cache_update,
        )
        np.testing.assert_allclose(output[:, 0], full[:, t], atol=1e-5)


def test_a_cross_attention_cache_per_item_serves_several_rows_per_item():
    block = DecoderBlock(num_heads=4, d_ff=32)
    beams = 3  # rows b * 3 + k, as beam search lays them out
    target = RNG.normal(size=(2 * beams, 1, 16)).astype("float32")
    expected = block(
        target,
        np.repeat(SOURCE, beams, axis=0),
        encoder_padding_mask=np.repeat(SOURCE_PADDING, beams, axis=0),
    )
    empty = np.zeros((2 * beams, 4, 0, 4), "float32")
    outputs, _ = block(
        target,
        encoder_padding_mask=SOURCE_PADDING,
        self_attention_cache=(empty, empty),
        cross_attention_cache=block.compute_cross_attention_cache(SOURCE),
        cache_index=0,
        cache_update="append",
    )  # the cache keeps one row per item
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_a_self_attention_cache_needs_an_update_mode():
    block = DecoderBlock(num_heads=4, d_ff=32)
    empty = np.zeros((2, 4, 0, 4), "float32")
    with pytest.raises(ValueError, match="cache_update"):
        block(TARGET, SOURCE, self_attention_cache=(empty, empty), cache_index=0)


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
