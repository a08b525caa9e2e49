import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.layers.position_wise import apply_to_positions

INPUTS = np.random.default_rng(0).normal(size=(3, 5, 8)).astype("float32")


@pytest.mark.parametrize("units", [1, 6])
def test_equals_the_layer_on_every_position(units):
    dense = keras.layers.Dense(units, activation="relu")
    np.testing.assert_allclose(
        apply_to_positions(dense, INPUTS), dense(INPUTS), atol=1e-6
    )


@pytest.mark.tensorflow
@pytest.mark.parametrize("spec", [[None, None, 8], [None, 1, 8], [3, None, 8]])
def test_traced_with_unknown_sizes_and_empty_batches(spec):
    dense = keras.layers.Dense(4)
    traced = tf.function(
        lambda x: apply_to_positions(dense, x), input_signature=[tf.TensorSpec(spec)]
    )
    inputs = INPUTS[:, :1] if spec[1] == 1 else INPUTS
    np.testing.assert_allclose(traced(inputs), dense(inputs), atol=1e-6)
    if spec[0] is None:
        assert tuple(traced(inputs[:0]).shape) == (0, inputs.shape[1], 4)


@pytest.mark.tensorflow
def test_gradients_equal_the_layers():
    dense = keras.layers.Dense(4)
    dense.build((None, 8))
    inputs = tf.constant(INPUTS)
    with tf.GradientTape(persistent=True) as tape:
        ours = tf.reduce_sum(apply_to_positions(dense, inputs) ** 2)
        plain = tf.reduce_sum(dense(inputs) ** 2)
    for ours_gradient, plain_gradient in zip(
        tape.gradient(ours, dense.trainable_weights),
        tape.gradient(plain, dense.trainable_weights),
        strict=True,
    ):
        np.testing.assert_allclose(ours_gradient, plain_gradient, rtol=1e-5)
