"""Token accuracy that ignores padding."""

import keras
from keras import ops

from keras_transformer.special_ids import PAD_ID


@keras.saving.register_keras_serializable(package="keras_transformer")
class MaskedAccuracy(keras.metrics.Metric):
    """Fraction of real (non-padding) tokens whose argmax prediction is right.

    Args:
        ignore_class: label id that is not a token (padding).
        name: name of the metric.
        dtype: dtype of the result.

    Example:

    >>> metric = MaskedAccuracy()
    >>> logits = np.eye(4, dtype="float32")[None, [1, 2, 3]]  # predicts 1, 2, 3
    >>> metric.update_state(np.array([[1, 3, 0]]), logits)
    >>> float(metric.result())  # one of two real tokens right
    0.5
    """

    def __init__(self, ignore_class=PAD_ID, name="masked_accuracy", dtype=None):
        super().__init__(name=name, dtype=dtype)
        self.ignore_class = ignore_class
        self.correct = self.add_variable((), "zeros", name="correct", aggregation="sum")
        self.total = self.add_variable((), "zeros", name="total", aggregation="sum")

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = ops.cast(y_true, "int32")  # (B, T)
        predictions = ops.cast(ops.argmax(y_pred, axis=-1), "int32")  # (B, T)
        weights = ops.cast(ops.not_equal(y_true, self.ignore_class), "float32")
        if sample_weight is not None:
            weights = weights * ops.cast(sample_weight, "float32")
        hits = ops.cast(ops.equal(y_true, predictions), "float32") * weights
        self.correct.assign_add(ops.sum(hits))
        self.total.assign_add(ops.sum(weights))

    def result(self):
        return ops.divide_no_nan(self.correct, self.total)

    def reset_state(self):
        self.correct.assign(0.0)
        self.total.assign(0.0)

    def get_config(self):
        return {
            "ignore_class": self.ignore_class,
            "name": self.name,
            "dtype": self.dtype,
        }
