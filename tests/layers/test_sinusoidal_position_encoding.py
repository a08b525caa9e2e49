import keras
import numpy as np
import pytest

from keras_transformer.layers import SinusoidalPositionEncoding, sinusoidal_encoding
from tests.layer_test_case import run_layer_test


def paper_encoding(positions, d_model):
    """Section 3.5, written out term by term."""
    table = np.zeros((len(positions), d_model))
    for row, pos in enumerate(positions):
        for channel in range(d_model):
            i = channel // 2
            angle = pos / 10000 ** (2 * i / d_model)
            table[row, channel] = np.sin(angle) if channel % 2 == 0 else np.cos(angle)
    return table


def marian_encoding(positions, d_model):
    """transformers' MarianSinusoidalPositionalEmbedding.create_weight, in NumPy."""
    table = np.array(
        [
            [pos / np.power(10000, 2 * (j // 2) / d_model) for j in range(d_model)]
            for pos in positions
        ]
    )
    sines = d_model // 2 + d_model % 2
    out = np.zeros_like(table)
    out[:, :sines] = np.sin(table[:, 0::2])
    out[:, sines:] = np.cos(table[:, 1::2])
    return out


@pytest.mark.parametrize("d_model", [16, 15, 512])
def test_split_sinusoid_matches_marian(d_model):
    encoding = np.array(sinusoidal_encoding(60, d_model, layout="split"))
    np.testing.assert_allclose(encoding, marian_encoding(range(60), d_model), atol=1e-5)


@pytest.mark.parametrize("d_model", [16, 15, 512])
def test_sinusoid_matches_the_paper_formula(d_model):
    encoding = np.array(sinusoidal_encoding(60, d_model))
    np.testing.assert_allclose(encoding, paper_encoding(range(60), d_model), atol=1e-5)


def test_sinusoid_has_no_length_limit_and_honours_the_start_index():
    encoding = np.array(sinusoidal_encoding(4, 32, start_index=9000))
    np.testing.assert_allclose(
        encoding, paper_encoding(range(9000, 9004), 32), atol=2e-3
    )


@pytest.mark.filterwarnings("ignore:The model does not have any trainable weights")
@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_layer_conventions(layout, tmp_path):
    embedded = np.random.default_rng(0).normal(size=(2, 5, 16)).astype("float32")
    run_layer_test(
        SinusoidalPositionEncoding,
        {"layout": layout},
        {"inputs": embedded},
        expected_output_shape=(2, 5, 16),
        expected_num_trainable_weights=0,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_layer_is_the_function_broadcast_over_the_batch(layout):
    embedded = np.zeros((3, 7, 10), "float32")
    encoding = SinusoidalPositionEncoding(layout)(embedded, start_index=4)
    expected = sinusoidal_encoding(7, 10, start_index=4, layout=layout)
    np.testing.assert_array_equal(encoding, np.broadcast_to(expected, (3, 7, 10)))


def test_angles_stay_float32_under_a_half_precision_policy():
    layer = SinusoidalPositionEncoding(dtype="mixed_float16")
    encoding = layer(np.zeros((1, 2, 8), "float16"), start_index=5000)
    assert keras.backend.standardize_dtype(encoding.dtype) == "float16"
    expected = np.float16(paper_encoding(range(5000, 5002), 8))
    np.testing.assert_allclose(np.float32(encoding[0]), expected, atol=2e-3)


def test_bad_layout_raises_value_error():
    with pytest.raises(ValueError, match="layout must be one of"):
        SinusoidalPositionEncoding("stacked")
