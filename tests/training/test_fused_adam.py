import keras
import numpy as np
import pytest

from keras_transformer.training.fused_adam import FusedAdam
from keras_transformer.training.schedules import TransformerSchedule

SETTINGS = dict(beta_1=0.9, beta_2=0.98, epsilon=1e-9)


def trajectories(accumulation=None, steps=12):
    """Weights after each step under Keras's Adam and FusedAdam, same gradients."""
    rng = np.random.default_rng(0)
    start = rng.normal(size=(6, 4)).astype("float32")
    weights, optimizers = [], []
    for kind in (keras.optimizers.Adam, FusedAdam):
        weights.append(keras.Variable(start))
        optimizers.append(
            kind(
                learning_rate=TransformerSchedule(d_model=16, warmup_steps=4),
                gradient_accumulation_steps=accumulation,
                **SETTINGS,
            )
        )
    history = []
    for _ in range(steps):
        gradient = rng.normal(size=start.shape).astype("float32")
        for weight, optimizer in zip(weights, optimizers, strict=True):
            optimizer.apply([gradient], [weight])
        history.append([np.array(weight) for weight in weights])
    return start, history


@pytest.mark.parametrize("accumulation", [None, 3])
def test_follows_keras_adam(accumulation):
    start, history = trajectories(accumulation)
    for keras_weights, fused_weights in history:
        np.testing.assert_allclose(fused_weights, keras_weights, atol=1e-6)
    assert not np.allclose(history[-1][1], start)  # it moved


def test_serializes():
    optimizer = FusedAdam(learning_rate=0.01, **SETTINGS)
    restored = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert isinstance(restored, FusedAdam)
    assert restored.get_config() == optimizer.get_config()
