import keras
import numpy as np
import pytest

from keras_transformer.layers import MultiHeadAttention
from tests.layer_test_case import check_output_shapes, run_layer_test

RNG = np.random.default_rng(0)
QUERY = RNG.normal(size=(2, 5, 16)).astype("float32")
VALUE = RNG.normal(size=(2, 7, 16)).astype("float32")
PADDING = np.array([[1] * 7, [1, 1, 1, 1, 0, 0, 0]], bool)


def paired_layers(num_heads=4, key_dim=4, value_dim=None):
    """Ours and Keras's, with Keras's (randomised) weights copied into ours.

    Keras keeps one (D, h, d) kernel and (h, d) bias per projection. Ours:
    `query` is Keras's query reshaped to (D, h * K); the keys and values go
    through `fuse_key_value` as (D, h * d) kernels; `output` is Keras's
    (h, V, D) reshaped to (h * V, D).
    """
    ours = MultiHeadAttention(num_heads, key_dim, value_dim)
    reference = keras.layers.MultiHeadAttention(num_heads, key_dim, value_dim)
    ours(QUERY, VALUE)
    reference(QUERY, VALUE)
    for dense in (reference._query_dense, reference._key_dense, reference._value_dense):
        dense.bias.assign(RNG.normal(size=dense.bias.shape))
    reference._output_dense.bias.assign(RNG.normal(size=(QUERY.shape[-1],)))

    def weights(dense):
        return np.array(dense.kernel), np.array(dense.bias)

    query_kernel, query_bias = weights(reference._query_dense)
    key_kernel, key_bias = weights(reference._key_dense)
    value_kernel, value_bias = weights(reference._value_dense)
    output_kernel, output_bias = weights(reference._output_dense)
    ours.query_dense.set_weights(
        [query_kernel.reshape(ours.query_dense.kernel.shape), query_bias.ravel()]
    )
    width = key_kernel.shape[0]
    ours.fuse_key_value(
        key_kernel.reshape(width, -1),
        key_bias.ravel(),
        value_kernel.reshape(width, -1),
        value_bias.ravel(),
    )
    ours.output_dense.set_weights(
        [output_kernel.reshape(ours.output_dense.kernel.shape), output_bias]
    )
    return ours, reference


def test_layer_conventions(tmp_path):
    run_layer_test(
        MultiHeadAttention,
        {"num_heads": 4, "key_dim": 4, "dropout": 0.1},
        {"query": QUERY, "value": VALUE, "padding_mask": PADDING},
        expected_output_shape=(2, 5, 16),
        expected_num_trainable_weights=6,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize(
    "value_dim",
    [
        None,
        pytest.param(
            6,
            marks=pytest.mark.xfail(
                keras.backend.backend() == "jax",
                reason="keras.layers.MultiHeadAttention fails on JAX "
                "when value_dim != key_dim (Keras 3.15)",
                strict=True,
            ),
        ),
    ],
)
def test_equals_keras_multi_head_attention(value_dim):
    ours, reference = paired_layers(value_dim=value_dim)
    expected, expected_scores = reference(QUERY, VALUE, return_attention_scores=True)
    outputs, scores = ours(QUERY, VALUE, return_attention_scores=True)
    np.testing.assert_allclose(outputs, expected, atol=1e-5)
    np.testing.assert_allclose(scores, expected_scores, atol=1e-5)


def test_equals_keras_with_a_separate_key():
    ours, reference = paired_layers()
    key = RNG.normal(size=VALUE.shape).astype("float32")
    np.testing.assert_allclose(
        ours(QUERY, VALUE, key), reference(QUERY, VALUE, key), atol=1e-5
    )


def test_equals_keras_with_padding_and_attention_masks():
    ours, reference = paired_layers()
    attention = RNG.random((2, 5, 7)) > 0.3
    attention[:, :, 0] = True  # every query sees at least one key
    combined = attention & PADDING[:, None, :]
    expected = reference(QUERY, VALUE, attention_mask=combined)
    outputs = ours(QUERY, VALUE, padding_mask=PADDING, attention_mask=attention)
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_equals_keras_with_causal_mask():
    ours, reference = paired_layers()
    expected = reference(QUERY, QUERY, use_causal_mask=True)
    outputs = ours(QUERY, QUERY, use_causal_mask=True)
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_padded_keys_do_not_change_outputs():
    layer = MultiHeadAttention(4, 4)
    changed = VALUE.copy()
    changed[1, 4:] = 100.0
    np.testing.assert_allclose(
        layer(QUERY, changed, padding_mask=PADDING),
        layer(QUERY, VALUE, padding_mask=PADDING),
        atol=1e-5,
    )


def test_future_keys_do_not_change_past_outputs():
    layer = MultiHeadAttention(4, 4)
    changed = QUERY.copy()
    changed[:, 3:] += 1.0
    np.testing.assert_allclose(
        layer(changed, changed, use_causal_mask=True)[:, :3],
        layer(QUERY, QUERY, use_causal_mask=True)[:, :3],
        atol=1e-5,
    )


@pytest.mark.parametrize("cache_update", ["write", "append"])
def test_self_attention_cache_equals_full_causal_pass(cache_update):
    layer = MultiHeadAttention(4, 4)
    full = np.array(layer(QUERY, QUERY, use_causal_mask=True))
    # a buffer with room for more than 5 tokens, or an empty cache that grows
    cache = layer.empty_cache(2, 0 if cache_update == "append" else 8)
    for t in range(5):
        step = QUERY[:, t : t + 1]
        output, cache = layer(
            step,
            step,
            use_causal_mask=True,
            cache=cache,
            cache_index=t,
            cache_update=cache_update,
        )
        np.testing.assert_allclose(output[:, 0], full[:, t], atol=1e-5)
        assert cache[0].shape[2] == (t + 1 if cache_update == "append" else 8)


@pytest.mark.parametrize("cache_update", ["write", "append"])
def test_a_cache_takes_several_tokens_a_step(cache_update):
    layer = MultiHeadAttention(4, 4)
    full = np.array(layer(QUERY, QUERY, use_causal_mask=True))
    empty = np.zeros((2, 4, 0 if cache_update == "append" else 5, 4), "float32")
    first, cache = layer(
        QUERY[:, :2],
        QUERY[:, :2],
        use_causal_mask=True,
        cache=(empty, empty),
        cache_index=0,
        cache_update=cache_update,
    )
    rest, cache = layer(
        QUERY[:, 2:],
        QUERY[:, 2:],
        use_causal_mask=True,
        cache=cache,
        cache_index=2,
        cache_update=cache_update,
    )
    np.testing.assert_allclose(np.concatenate([first, rest], 1), full, atol=1e-5)


def test_cross_attention_cache_equals_direct_call():
    layer = MultiHeadAttention(4, 4, value_dim=6)
    direct = layer(QUERY, VALUE, padding_mask=PADDING)
    keys, values = layer.compute_cache(VALUE)
    assert (tuple(keys.shape), tuple(values.shape)) == ((2, 4, 7, 4), (2, 4, 7, 6))
    cached, cache = layer(QUERY, padding_mask=PADDING, cache=(keys, values))
    np.testing.assert_allclose(cached, direct, atol=1e-6)
    assert cache[0] is keys and cache[1] is values  # read as given


@pytest.mark.parametrize("policy", ["float32", "mixed_bfloat16"])
def test_an_empty_cache_has_the_layer_s_shapes_and_compute_dtype(policy):
    layer = MultiHeadAttention(4, 4, value_dim=6, dtype=policy)
    keys, values = layer.empty_cache(keras.ops.convert_to_tensor(3), length=5)
    assert (tuple(keys.shape), tuple(values.shape)) == ((3, 4, 5, 4), (3, 4, 5, 6))
    dtypes = {keras.backend.standardize_dtype(part.dtype) for part in (keys, values)}
    assert dtypes == {policy.removeprefix("mixed_")}
    assert tuple(layer.empty_cache(2)[0].shape) == (2, 4, 0, 4)


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"return_attention_scores": True},
        {"cache": 3, "cache_index": 3, "cache_update": "append"},
        {"cache": 12, "cache_index": 3, "cache_update": "write"},
        {"cross_attention_cache": True},
    ],
)
def test_compute_output_shape_gives_every_call_s_shapes(arguments):
    layer = MultiHeadAttention(4, 4, value_dim=6, output_dim=10)
    layer(QUERY, VALUE)
    inputs = {"query": QUERY, "value": VALUE}
    length = arguments.pop("cache", None)
    if length is not None:
        inputs["cache"] = layer.empty_cache(2, length)
    if arguments.pop("cross_attention_cache", False):
        inputs["cache"] = layer.compute_cache(VALUE)
    check_output_shapes(layer, inputs, arguments)


def test_split_and_fuse_key_value_are_inverse_and_match_the_projection():
    layer = MultiHeadAttention(2, 4, value_dim=3)
    layer(QUERY, VALUE)
    (key_kernel, key_bias), (value_kernel, value_bias) = layer.split_key_value()
    assert key_kernel.shape == (16, 8) and value_kernel.shape == (16, 6)
    key_bias, value_bias = RNG.normal(size=8), RNG.normal(size=6)
    layer.fuse_key_value(key_kernel, key_bias, value_kernel, value_bias)
    keys, values = layer.compute_cache(VALUE)  # (B, h, S, K|V)
    expected_keys = (VALUE @ key_kernel + key_bias).reshape(2, 7, 2, 4)
    expected_values = (VALUE @ value_kernel + value_bias).reshape(2, 7, 2, 3)
    np.testing.assert_allclose(keys, expected_keys.transpose(0, 2, 1, 3), atol=1e-5)
    np.testing.assert_allclose(values, expected_values.transpose(0, 2, 1, 3), atol=1e-5)
    split = layer.split_key_value()
    np.testing.assert_array_equal(split[0][1], key_bias.astype("float32"))
    np.testing.assert_array_equal(split[1][0], value_kernel)


@pytest.mark.parametrize(
    "arguments, message",
    [
        ({"cache_update": "grow"}, "cache_update must be"),
        ({"cache_update": "append"}, "needs a `cache`"),
        ({"cache_index": 0, "cache_update": "write"}, "needs a `cache`"),
        ({"with_cache": True, "return_attention_scores": True}, "not supported"),
    ],
)
def test_meaningless_cache_arguments_raise_value_error(arguments, message):
    layer = MultiHeadAttention(4, 4)
    layer(QUERY, VALUE)
    if arguments.pop("with_cache", False):
        arguments["cache"] = layer.compute_cache(VALUE)
    with pytest.raises(ValueError, match=message):
        layer(QUERY, VALUE, **arguments)


def test_an_empty_batch_keeps_its_shapes():
    layer = MultiHeadAttention(4, 4)
    outputs, scores = layer(QUERY[:0], VALUE[:0], return_attention_scores=True)
    assert (tuple(outputs.shape), tuple(scores.shape)) == ((0, 5, 16), (0, 4, 5, 7))
    cache = layer.compute_cache(VALUE[:0])
    assert [tuple(part.shape) for part in cache] == [(0, 4, 7, 4)] * 2


@pytest.mark.tensorflow  # JAX cannot reshape an empty array to (0, -1, ...)
def test_an_empty_batch_keeps_its_shapes_through_a_cross_attention_cache():
    layer = MultiHeadAttention(4, 4)
    layer.build(QUERY.shape, VALUE.shape)
    cache = layer.compute_cache(VALUE[:0])
    assert tuple(layer(QUERY[:0], cache=cache)[0].shape) == (0, 5, 16)


@pytest.mark.parametrize("policy", ["mixed_float16", "mixed_bfloat16"])
def test_fully_masked_rows_stay_finite_in_half_precision(policy):
    layer = MultiHeadAttention(4, 4, dtype=policy)
    padding = PADDING.copy()
    padding[1] = False
    outputs = layer(QUERY, VALUE, padding_mask=padding)
    assert outputs.dtype == policy.removeprefix("mixed_")
    assert np.all(np.isfinite(np.array(outputs, dtype="float32")))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_heads": 0, "key_dim": 4}, "num_heads"),
        ({"num_heads": 2, "key_dim": 0}, "key_dim"),
        ({"num_heads": 2, "key_dim": 4, "dropout": 1.5}, "dropout"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MultiHeadAttention(**kwargs)
