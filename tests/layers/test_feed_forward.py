import numpy as np
import pytest

from keras_transformer.layers import FeedForward
from tests.layer_test_case import run_layer_test

INPUTS = np.random.default_rng(0).normal(size=(2, 3, 8)).astype("float32")


def test_layer_conventions(tmp_path):
    run_layer_test(
        FeedForward,
        {"d_ff": 32, "dropout": 0.1},
        {"inputs": INPUTS},
        expected_output_shape=(2, 3, 8),
        expected_num_trainable_weights=4,
        tmp_path=tmp_path,
    )


def test_equals_relu_network_of_section_3_3():
    layer = FeedForward(d_ff=32, bias_initializer="random_normal")
    outputs = np.array(layer(INPUTS))
    w1, b1 = (np.array(w) for w in layer.inner_dense.weights)
    w2, b2 = (np.array(w) for w in layer.output_dense.weights)
    expected = np.maximum(INPUTS @ w1 + b1, 0) @ w2 + b2
    np.testing.assert_allclose(outputs, expected, atol=1e-5)


@pytest.mark.parametrize(
    "kwargs, message", [({"d_ff": 0}, "d_ff"), ({"d_ff": 4, "dropout": 1}, "dropout")]
)
def test_bad_arguments_raise_value_error(kwargs, message):
    with pytest.raises(ValueError, match=message):
        FeedForward(**kwargs)
