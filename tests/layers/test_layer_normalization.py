import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.layers import LayerNormalization
from tests.layer_test_case import run_layer_test

RNG = np.random.default_rng(0)
# Far from zero mean and unit variance, where a careless formula loses digits.
INPUTS = (RNG.normal(size=(2, 5, 16)) * 10 + 100).astype("float32")


def paired_layers(**kwargs):
    """Ours and Keras's with the same random gamma and beta."""
    ours = LayerNormalization(**kwargs)
    reference = keras.layers.LayerNormalization(**kwargs)
    reference.build(INPUTS.shape)
    ours.build(INPUTS.shape)
    weights = [RNG.normal(size=w.shape) for w in reference.weights]
    reference.set_weights(weights)
    ours.set_weights(weights)
    return ours, reference


def test_layer_conventions(tmp_path):
    run_layer_test(
        LayerNormalization,
        {"epsilon": 1e-6},
        {"inputs": INPUTS},
        expected_output_shape=(2, 5, 16),
        expected_num_trainable_weights=2,
        tmp_path=tmp_path,
    )


@pytest.mark.parametrize("epsilon", [1e-6, 1e-3])
def test_equals_keras_layer_normalization(epsilon):
    ours, reference = paired_layers(epsilon=epsilon)
    np.testing.assert_allclose(ours(INPUTS), reference(INPUTS), atol=1e-5)


def test_other_axes_fall_back_to_keras():
    ours, reference = paired_layers(axis=1)
    np.testing.assert_allclose(ours(INPUTS), reference(INPUTS), atol=1e-5)


def test_weights_are_keras_weights():
    ours, reference = paired_layers()
    assert [w.name for w in ours.weights] == [w.name for w in reference.weights]
    assert ours.get_config() == {
        **reference.get_config(),
        "name": ours.name,
    }


def test_computes_in_float32_under_a_mixed_policy():
    ours = LayerNormalization(dtype="mixed_float16")
    reference = keras.layers.LayerNormalization(dtype="mixed_float16")
    outputs = ours(INPUTS)
    assert outputs.dtype == "float16"
    assert ours.gamma.dtype == "float32"
    np.testing.assert_allclose(
        np.array(outputs, "float32"),
        np.array(reference(INPUTS), "float32"),
        atol=1e-3,
    )


@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", [(2, 5, 16), (7, 16)])
def test_gradients_equal_keras_layer_normalization(shape, training):
    ours, reference = paired_layers(epsilon=1e-3)
    inputs = tf.constant(INPUTS.reshape(-1, 16)[: np.prod(shape) // 16].reshape(shape))
    # A loss that weights every output differently, so no gradient term cancels.
    weights = tf.constant(RNG.normal(size=shape), tf.float32)

    def gradients(layer):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            loss = tf.reduce_sum(tf.sin(layer(inputs, training=training)) * weights)
        return tape.gradient(loss, [inputs, layer.gamma, layer.beta])

    for ours_gradient, reference_gradient in zip(
        gradients(ours), gradients(reference), strict=True
    ):
        np.testing.assert_allclose(ours_gradient, reference_gradient, atol=1e-5)
