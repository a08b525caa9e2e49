"""The label-smoothed cross-entropy of section 5.4, averaged over real tokens."""

import keras
import tensorflow as tf
from keras import ops


@keras.saving.register_keras_serializable(package="keras_transformer")
class LabelSmoothedCrossEntropy(keras.losses.Loss):
    """Sparse cross-entropy with label smoothing that ignores padding.

    The target distribution is (1 - epsilon) on the true token plus
    epsilon / vocab_size on every token, as in
    `keras.losses.CategoricalCrossentropy(label_smoothing=epsilon)`. Positions
    whose label is `ignore_class` (padding) contribute nothing, and the
    result is the mean over the real tokens of the whole global batch: under
    a `tf.distribute` strategy each replica divides its sum by the token
    count summed over all replicas, so the gradient equals the single-device
    one whatever the split.

    Args:
        label_smoothing: epsilon_ls in [0, 1); 0.1 in the paper.
        ignore_class: label id that is not a token (padding), or `None`.
        from_logits: whether predictions are logits (the model's output) or
            probabilities.
        name: name of the loss.
        dtype: dtype of the computation; float32 by default.

    Example:

    >>> loss = LabelSmoothedCrossEntropy(label_smoothing=0.1)
    >>> labels = np.array([[3, 1, 0]])
    >>> logits = np.zeros((1, 3, 5), "float32")
    >>> round(float(loss(labels, logits)), 4)  # uniform prediction: log(5)
    1.6094
    """

    def __init__(
        self,
        label_smoothing=0.1,
        ignore_class=0,
        from_logits=True,
        name="label_smoothed_cross_entropy",
        dtype=None,
    ):
        super().__init__(name=name, reduction="sum", dtype=dtype)
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(
                f"label_smoothing must be in [0, 1), got {label_smoothing}."
            )
        self.label_smoothing = label_smoothing
        self.ignore_class = ignore_class
        self.from_logits = from_logits

    def call(self, y_true, y_pred):
        y_true = ops.cast(y_true, "int32")  # (B, T)
        y_pred = ops.cast(y_pred, "float32")  # (B, T, V)
        if self.from_logits:
            # log p = z - logsumexp(z), without materialising log p: fewer
            # passes over the (B, T, V) logits, the costliest tensor here.
            scores, normaliser = y_pred, ops.logsumexp(y_pred, axis=-1)  # (B, T)
        else:
            scores, normaliser = ops.log(ops.clip(y_pred, 1e-7, 1.0)), 0.0
        true_score = tf.gather(scores, y_true, batch_dims=2)  # (B, T)
        mean_score = ops.mean(scores, axis=-1)  # (B, T)
        epsilon = self.label_smoothing
        losses = normaliser - (1.0 - epsilon) * true_score - epsilon * mean_score
        if self.ignore_class is None:
            weights = ops.ones_like(losses)
        else:
            weights = ops.cast(ops.not_equal(y_true, self.ignore_class), "float32")
        return losses * weights / global_sum(ops.sum(weights))  # summed by Keras

    def get_config(self):
        return {
            "label_smoothing": self.label_smoothing,
            "ignore_class": self.ignore_class,
            "from_logits": self.from_logits,
            "name": self.name,
            "dtype": self.dtype,
        }


def global_sum(value):
    """Sums `value` over the replicas of the current `tf.distribute` strategy.

    Outside a replica context (or with one replica) returns `value`. Never
    returns less than 1, so an all-padding batch yields a zero loss.
    """
    context = tf.distribute.get_replica_context()
    if context is not None and context.num_replicas_in_sync > 1:
        value = context.all_reduce(tf.distribute.ReduceOp.SUM, value)
    return ops.maximum(value, 1.0)
