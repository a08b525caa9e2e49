import keras
import numpy as np
import pytest

from keras_transformer.layers import PositionalEmbedding
from tests.layer_test_case import run_layer_test
from tests.layers.test_sinusoidal_position_encoding import (
    marian_encoding,
    paper_encoding,
)


def test_layer_conventions(tmp_path):
    ids = np.array([[5, 7, 9, 0, 0], [1, 2, 3, 4, 5]], "int32")
    run_layer_test(
        PositionalEmbedding,
        {"vocab_size": 12, "d_model": 16, "dropout": 0.1},
        {"inputs": ids},
        expected_output_shape=(2, 5, 16),
        expected_num_trainable_weights=1,
        tmp_path=tmp_path,
    )


def test_layer_conventions_of_the_output_bias(tmp_path):
    hidden = np.random.default_rng(0).normal(size=(2, 5, 16)).astype("float32")
    options = {"sinusoid_layout": "split", "scale_embedding": False}
    run_layer_test(
        PositionalEmbedding,
        {"vocab_size": 12, "d_model": 16, "output_bias": True, **options},
        {"inputs": hidden},
        call_kwargs={"reverse": True},
        expected_output_shape=(2, 5, 12),
        expected_num_trainable_weights=2,
        tmp_path=tmp_path,
    )


def test_symbolic_logits_are_float32_under_a_mixed_policy():
    layer = PositionalEmbedding(12, 16, dtype="mixed_bfloat16")
    ids = keras.Input((None,), dtype="int32")
    embedded = layer(ids)
    logits = layer(embedded, reverse=True)
    assert (embedded.dtype, tuple(embedded.shape)) == ("bfloat16", (None, None, 16))
    assert (logits.dtype, tuple(logits.shape)) == ("float32", (None, None, 12))
    eager = layer(np.array([[5, 7, 0]]))
    logits = layer(eager, reverse=True)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"


def test_unscaled_embedding_and_output_bias():
    layer = PositionalEmbedding(
        20, 8, sinusoid_layout="split", scale_embedding=False, output_bias=True
    )
    layer.build()
    matrix = np.array(layer.token_embedding.embeddings)
    ids = np.array([[3, 4, 5]])
    expected = matrix[ids] + marian_encoding(range(3), 8)[None]
    np.testing.assert_allclose(layer(ids), expected, atol=1e-5)
    layer.bias.assign(np.arange(20, dtype="float32"))
    hidden = np.random.default_rng(0).normal(size=(1, 2, 8)).astype("float32")
    expected = hidden @ matrix.T + np.arange(20)
    np.testing.assert_allclose(layer(hidden, reverse=True), expected, atol=1e-5)


def test_output_is_scaled_embedding_plus_encoding():
    layer = PositionalEmbedding(vocab_size=20, d_model=8)
    ids = np.array([[3, 4, 5, 6, 0]])
    outputs = np.array(layer(ids))
    matrix = np.array(layer.token_embedding.embeddings)
    expected = matrix[ids] * np.sqrt(8) + paper_encoding(range(5), 8)[None]
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


def test_start_index_embeds_token_t_at_position_t():
    layer = PositionalEmbedding(vocab_size=20, d_model=8)
    ids = np.array([[3, 4, 5, 6, 7, 8]])
    full = np.array(layer(ids))
    for t in range(6):
        step = np.array(layer(ids[:, t : t + 1], start_index=t))
        np.testing.assert_allclose(step[:, 0], full[:, t], atol=1e-6)


def test_padding_mask_comes_from_id_zero():
    layer = PositionalEmbedding(vocab_size=20, d_model=8)
    ids = np.array([[3, 4, 0, 0]])
    np.testing.assert_array_equal(layer.compute_mask(ids), [[True, True, False, False]])
    assert PositionalEmbedding(20, 8, mask_zero=False).compute_mask(ids) is None


def test_reverse_projects_on_the_embedding_matrix_in_float32():
    layer = PositionalEmbedding(vocab_size=20, d_model=8, dtype="mixed_bfloat16")
    layer.build()
    hidden = np.random.default_rng(0).normal(size=(2, 3, 8)).astype("float32")
    logits = layer(hidden, reverse=True)
    assert logits.dtype == "float32"
    expected = hidden @ np.array(layer.token_embedding.embeddings).T
    np.testing.assert_allclose(logits, expected, rtol=0.05, atol=0.05)
    assert layer.compute_mask(hidden) is None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"vocab_size": 0, "d_model": 8}, "vocab_size"),
        ({"vocab_size": 10, "d_model": 0}, "d_model"),
        ({"vocab_size": 10, "d_model": 8, "dropout": 1.0}, "dropout"),
        ({"vocab_size": 10, "d_model": 8, "dropout": -0.1}, "dropout"),
        ({"vocab_size": 10, "d_model": 8, "sinusoid_layout": "x"}, "sinusoid_layout"),
    ],
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PositionalEmbedding(**kwargs)


def test_keras_mask_reaches_downstream_layers():
    inputs = keras.Input((None,), dtype="int32")
    embedded = PositionalEmbedding(vocab_size=10, d_model=4)(inputs)
    pooled = keras.layers.GlobalAveragePooling1D()(embedded)
    model = keras.Model(inputs, pooled)
    with_padding = np.array(model(np.array([[3, 4, 0, 0]])))
    without = np.array(model(np.array([[3, 4]])))
    np.testing.assert_allclose(with_padding, without, atol=1e-6)


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_padding_mask_for_every_integer_dtype(dtype):
    ids = np.array([[3, 4, 0]], dtype)
    mask = PositionalEmbedding(vocab_size=20, d_model=8).compute_mask(ids)
    np.testing.assert_array_equal(mask, [[True, True, False]])


def test_composed_of_a_reversible_embedding_and_the_encoding():
    layer = PositionalEmbedding(20, 8, sinusoid_layout="split", name="embedding")
    layer.build()
    assert isinstance(layer.token_embedding, keras.layers.ReversibleEmbedding)
    assert layer.position_encoding.layout == "split"
    assert [w.path for w in layer.weights] == ["embedding/token_embedding/embeddings"]
