import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.layers.dense import FEW_ROWS, Dense
from tests.layer_test_case import run_layer_test, traced_op_types

RNG = np.random.default_rng(0)


def test_layer_conventions(tmp_path):
    run_layer_test(
        Dense,
        {"units": 5, "activation": "relu"},
        {"inputs": RNG.normal(size=(3, 4)).astype("float32")},
        expected_output_shape=(3, 5),
        expected_num_trainable_weights=2,
        tmp_path=tmp_path,
    )


def _pair(units=6, activation="relu", dtype=None):
    """Our Dense and keras.layers.Dense with the same weights."""
    ours = Dense(units, activation=activation, bias_initializer="normal", dtype=dtype)
    theirs = keras.layers.Dense(units, activation=activation, dtype=dtype)
    ours.build((None, 4))
    theirs.build((None, 4))
    theirs.set_weights(ours.get_weights())
    return ours, theirs


@pytest.mark.parametrize("shape", [(1, 4), (2, 2, 4), (FEW_ROWS, 4), (9, 4)])
def test_equals_keras_dense_at_any_row_count(shape):
    ours, theirs = _pair()
    inputs = tf.constant(RNG.normal(size=shape), tf.float32)
    call = tf.function(lambda layer: layer(inputs))
    np.testing.assert_allclose(call(ours), call(theirs), atol=1e-6)


@pytest.mark.parametrize(
    "spec, apart",
    [
        (tf.TensorSpec((1, 4)), True),
        (tf.TensorSpec((2, FEW_ROWS // 2, 4)), True),
        (tf.TensorSpec((FEW_ROWS + 1, 4)), False),
        (tf.TensorSpec((None, 4)), False),  # rows unknown when tracing
    ],
)
def test_adds_the_bias_apart_only_at_few_known_rows(spec, apart):
    ours, _ = _pair()
    assert ("ExpandDims" in traced_op_types(ours, spec)) == apart


def test_bfloat16_keeps_the_fused_kernel():
    ours, theirs = _pair(dtype="mixed_bfloat16")
    assert "ExpandDims" not in traced_op_types(ours, tf.TensorSpec((1, 4)))
    inputs = RNG.normal(size=(1, 4)).astype("float32")
    np.testing.assert_array_equal(ours(inputs), theirs(inputs))


def test_gradients_equal_keras_dense():
    ours, theirs = _pair()
    inputs = tf.constant(RNG.normal(size=(2, 4)), tf.float32)

    def gradients(layer):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.function(layer)(inputs) ** 2)
        return tape.gradient(loss, layer.trainable_weights)

    for mine, reference in zip(gradients(ours), gradients(theirs), strict=True):
        np.testing.assert_allclose(mine, reference, atol=1e-5)
