import keras
import numpy as np

from keras_transformer import MaskedAccuracy


def test_counts_only_real_tokens_across_batches():
    metric = MaskedAccuracy()
    labels = np.array([[1, 2, 3, 0], [4, 0, 0, 0]])
    predicted = np.array([[1, 2, 0, 0], [1, 3, 3, 3]])  # 2 of 3, then 0 of 1
    logits = np.eye(5, dtype="float32")[predicted]
    metric.update_state(labels[:1], logits[:1])
    metric.update_state(labels[1:], logits[1:])
    assert float(metric.result()) == 0.5
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_serializes():
    metric = MaskedAccuracy(name="acc")
    restored = keras.metrics.deserialize(keras.metrics.serialize(metric))
    assert restored.get_config() == metric.get_config()
