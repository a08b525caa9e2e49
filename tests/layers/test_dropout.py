import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_transformer.layers.dropout import Dropout

SHAPE = (64, 32, 128)  # 262,144 elements


def dropped(rate, seed=0, training=True, dtype="float32"):
    layer = Dropout(rate, seed=seed, dtype=dtype)
    return layer, np.array(layer(np.ones(SHAPE, "float32"), training=training))


@pytest.mark.parametrize("rate", [0.1, 0.3, 0.5])
def test_drop_fraction_and_scale_match_the_rate(rate):
    _, outputs = dropped(rate)
    kept = outputs != 0
    np.testing.assert_allclose(outputs[kept], 1 / (1 - rate), rtol=1e-6)
    # Five standard deviations of a binomial proportion over 262k draws.
    tolerance = 5 * np.sqrt(rate * (1 - rate) / kept.size)
    assert abs((1 - kept.mean()) - rate) < tolerance


def test_elements_are_dropped_independently():
    _, outputs = dropped(0.5)
    kept = (outputs != 0).ravel().astype("float64")
    # Neighbours share a 32-bit random word; their masks must not correlate.
    assert abs(np.corrcoef(kept[0::2], kept[1::2])[0, 1]) < 0.02
    # Nor may the mask repeat along an axis.
    assert not np.array_equal(kept[: kept.size // 2], kept[kept.size // 2 :])


def test_identity_at_inference_and_rate_zero():
    x = np.random.default_rng(0).normal(size=(3, 5)).astype("float32")
    assert np.array_equal(Dropout(0.5)(x, training=False), x)
    assert np.array_equal(Dropout(0.0)(x, training=True), x)


def test_seeded_layers_repeat_and_successive_calls_differ():
    layer, first = dropped(0.3, seed=7)
    _, same = dropped(0.3, seed=7)
    assert np.array_equal(first, same)
    assert not np.array_equal(first, np.array(layer(np.ones(SHAPE), training=True)))


def test_gradient_is_the_mask_times_the_scale():
    layer = Dropout(0.2, seed=3)
    x = tf.Variable(np.ones((4, 50), "float32"))
    with tf.GradientTape() as tape:
        outputs = layer(x, training=True)
    np.testing.assert_allclose(tape.gradient(outputs, x), outputs)


def test_under_xla_and_bfloat16():
    layer = Dropout(0.25, seed=1, dtype="bfloat16")
    run = tf.function(lambda x: layer(x, training=True), jit_compile=True)
    outputs = np.array(run(tf.ones(SHAPE, tf.bfloat16)), "float32")
    scale = float(tf.cast(1 / 0.75, tf.bfloat16))
    assert set(np.unique(outputs).tolist()) <= {0.0, scale}
    assert abs((outputs == 0).mean() - 0.25) < 0.01


def test_noise_shape_falls_back_to_keras():
    layer = Dropout(0.5, noise_shape=(64, 1, 128), seed=0)
    shared = np.array(layer(np.ones(SHAPE), training=True))
    assert (shared == shared[:, :1, :]).all()  # one mask value along axis 1


def test_serializes():
    layer = Dropout(0.2, seed=4, name="drop")
    restored = keras.layers.deserialize(keras.layers.serialize(layer))
    assert isinstance(restored, Dropout)
    assert restored.get_config() == layer.get_config()
