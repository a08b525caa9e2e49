import keras
import numpy as np
import pytest

from keras_transformer.layers import DecoderBlock, PositionalEmbedding
from tests.layer_test_case import check_output_shapes, run_layer_test

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
    length = 9 if cache_update == "write" else 0
    self_cache = block.empty_self_attention_cache(2, length)
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


BEAMS = 3
BEAM_TARGET = RNG.normal(size=(2 * BEAMS, 1, 16)).astype("float32")


def beam_step(block, rows_per_item, target=BEAM_TARGET):
    """A first step of `target`'s rows against one cache row per item."""
    outputs, _ = block(
        target,
        encoder_padding_mask=SOURCE_PADDING,
        self_attention_cache=block.empty_self_attention_cache(
            keras.ops.shape(target)[0]
        ),
        cross_attention_cache=block.compute_cross_attention_cache(SOURCE),
        cache_index=0,
        cache_update="append",
        rows_per_item=rows_per_item,
    )
    return outputs


def tiled_step(block):
    """The same step against an encoder sequence of one row per beam."""
    return block(
        BEAM_TARGET,
        np.repeat(SOURCE, BEAMS, axis=0),  # rows b * 3 + k, as beam search's
        encoder_padding_mask=np.repeat(SOURCE_PADDING, BEAMS, axis=0),
    )


@pytest.mark.parametrize("as_tensor", [False, True])
def test_a_cross_attention_cache_per_item_serves_several_rows_per_item(as_tensor):
    block = DecoderBlock(num_heads=4, d_ff=32)
    rows_per_item = keras.ops.convert_to_tensor(BEAMS) if as_tensor else BEAMS
    expected = tiled_step(block)
    np.testing.assert_allclose(beam_step(block, rows_per_item), expected, atol=1e-5)


@pytest.mark.tensorflow
def test_rows_per_item_as_a_tensor_in_a_graph_of_unknown_batch():
    import tensorflow as tf

    block = DecoderBlock(num_heads=4, d_ff=32)
    expected = tiled_step(block)
    step = tf.function(
        lambda target, rows_per_item: beam_step(block, rows_per_item, target),
        input_signature=[
            tf.TensorSpec((None, 1, 16)),
            tf.TensorSpec((), tf.int32),
        ],
    )
    np.testing.assert_allclose(step(BEAM_TARGET, BEAMS), expected, atol=1e-5)


@pytest.mark.parametrize("rows_per_item", [2, 4])
def test_rows_that_do_not_fit_the_cross_attention_cache_raise(rows_per_item):
    block = DecoderBlock(num_heads=4, d_ff=32)
    block(TARGET, SOURCE)
    expected = 2 * rows_per_item
    message = (
        f"6 rows, but cross_attention_cache has 2 rows and "
        f"rows_per_item={rows_per_item}: expected 2 \\* {rows_per_item} = {expected}"
    )
    with pytest.raises(ValueError, match=message):
        beam_step(block, rows_per_item)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"rows_per_item": 0}, "rows_per_item must be >= 1, got 0"),
        ({"rows_per_item": 3, "encoder": True}, "needs a cross_attention_cache"),
    ],
)
def test_meaningless_rows_per_item_raise(arguments, message):
    block = DecoderBlock(num_heads=4, d_ff=32)
    block(TARGET, SOURCE)
    with pytest.raises(ValueError, match=message):
        if arguments.pop("encoder", False):
            block(TARGET, SOURCE, **arguments)
        else:
            beam_step(block, **arguments)


def test_keras_masks_are_the_padding_masks_fallback():
    target_ids = keras.Input((None,), dtype="int32")
    source_ids = keras.Input((None,), dtype="int32")
    embedding = PositionalEmbedding(10, 16)
    block = DecoderBlock(num_heads=4, d_ff=32)
    model = keras.Model(
        [target_ids, source_ids], block(embedding(target_ids), embedding(source_ids))
    )
    target = np.array([[3, 4, 0, 5, 0], [6, 7, 8, 9, 1]])  # a gap at 2
    source = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6]])
    explicit = block(
        embedding(target),
        embedding(source),
        decoder_padding_mask=target != 0,
        encoder_padding_mask=source != 0,
    )
    np.testing.assert_allclose(model([target, source]), explicit, atol=1e-6)
    unmasked = block(
        embedding(target),
        embedding(source),
        decoder_padding_mask=np.ones(target.shape, bool),
        encoder_padding_mask=np.ones(source.shape, bool),
    )  # the masks matter
    assert not np.allclose(unmasked, explicit, atol=1e-3)


def test_a_decoder_padding_mask_with_a_self_attention_cache_raises():
    block = DecoderBlock(num_heads=4, d_ff=32)
    block(TARGET, SOURCE)
    with pytest.raises(ValueError, match="pass decoder_attention_mask, \\(B, T, L\\)"):
        block(
            TARGET[:, :1],
            SOURCE,
            decoder_padding_mask=np.ones((2, 1), bool),
            self_attention_cache=block.empty_self_attention_cache(2),
            cache_index=0,
            cache_update="append",
        )


@pytest.mark.parametrize("cache_update", ["write", "append"])
def test_a_decoder_attention_mask_hides_positions_of_the_cache(cache_update):
    block = DecoderBlock(num_heads=4, d_ff=32)
    padding = np.array([[1, 1, 1, 1, 1], [1, 0, 1, 0, 1]], bool)
    full = np.array(block(TARGET, SOURCE, decoder_padding_mask=padding))
    self_cache = block.empty_self_attention_cache(
        2, 5 if cache_update == "write" else 0
    )
    for t in range(5):
        visible = padding if cache_update == "write" else padding[:, : t + 1]
        output, self_cache = block(
            TARGET[:, t : t + 1],
            SOURCE,
            decoder_attention_mask=visible[:, None, :],  # (B, 1, L)
            self_attention_cache=self_cache,
            cache_index=t,
            cache_update=cache_update,
        )
        np.testing.assert_allclose(output[:, 0], full[:, t], atol=1e-5)


def test_an_empty_self_attention_cache_comes_from_the_self_attention():
    block = DecoderBlock(num_heads=4, d_ff=32, dtype="mixed_bfloat16")
    with pytest.raises(ValueError, match="not built"):
        block.empty_self_attention_cache(2)
    block(TARGET, SOURCE)
    keys, values = block.empty_self_attention_cache(3, length=7)
    assert tuple(keys.shape) == tuple(values.shape) == (3, 4, 7, 4)
    dtypes = {keras.backend.standardize_dtype(part.dtype) for part in (keys, values)}
    assert dtypes == {"bfloat16"}


@pytest.mark.parametrize(
    "arguments",
    [
        {"return_attention_scores": True},
        {"cache": 2, "cache_index": 2, "cache_update": "append"},
        {"cache": 6, "cache_index": 2, "cache_update": "write"},
        {"cache": 2, "cache_index": 2, "cache_update": "append", "cross": True},
    ],
)
def test_compute_output_shape_gives_every_call_s_shapes(arguments):
    block = DecoderBlock(num_heads=4, d_ff=32)
    block(TARGET, SOURCE)
    length = arguments.pop("cache", None)
    inputs = {"decoder_sequence": TARGET[:, :3]}
    if arguments.pop("cross", False):
        inputs["cross_attention_cache"] = block.compute_cross_attention_cache(SOURCE)
    else:
        inputs["encoder_sequence"] = SOURCE
    if length is not None:
        inputs["self_attention_cache"] = block.empty_self_attention_cache(2, length)
    check_output_shapes(block, inputs, arguments)


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
