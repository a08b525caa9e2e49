"""The label-smoothed cross-entropy of section 5.4, averaged over real tokens."""

import keras
from keras import ops

from keras_transformer.special_ids import PAD_ID


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
    one whatever the split. On JAX and PyTorch, where Keras computes the loss
    of the whole batch at once, it divides by the batch's real tokens.

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
        ignore_class=PAD_ID,
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
        epsilon = self.label_smoothing
        if self.from_logits:
            losses = smoothed_cross_entropy(y_pred, y_true, epsilon)  # (B, T)
        else:
            log_probabilities = ops.log(ops.clip(y_pred, 1e-7, 1.0))  # (B, T, V)
            true = ops.take_along_axis(log_probabilities, y_true[..., None], axis=-1)
            mean = ops.mean(log_probabilities, axis=-1)  # (B, T)
            losses = -(1.0 - epsilon) * true[..., 0] - epsilon * mean
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


def smoothed_cross_entropy(logits, labels, epsilon):
    """Per-token label-smoothed cross-entropy of `logits` (..., V), float32.

    logsumexp(z) - (1 - epsilon) z[label] - epsilon mean(z). On TensorFlow
    its gradient is written out as softmax(z) - target distribution, from
    the exponentials of the forward pass: seven passes over the logits
    instead of the about fifteen of automatic differentiation, which also
    turns the gather of the true logit into a scatter over the whole (N, V)
    gradient. The logits are the largest tensor of a training step; on a
    CPU this saves about a sixth of the small preset's step time. The other
    backends differentiate the formula.

    Args:
        logits: (..., V) float32 logits.
        labels: (...) int32 labels in [0, V).
        epsilon: label smoothing.

    Returns:
        The loss per position, of shape `labels.shape`.

    Example:

    >>> logits = np.log(np.array([[0.5, 0.25, 0.25]], "float32"))
    >>> labels = np.array([0], "int32")
    >>> np.round(np.asarray(smoothed_cross_entropy(logits, labels, 0.0)), 4)  # -log .5
    array([0.6931], dtype=float32)
    """
    if keras.backend.backend() != "tensorflow":
        true = ops.take_along_axis(logits, labels[..., None], axis=-1)[..., 0]
        mean = ops.mean(logits, axis=-1)  # (...)
        return ops.logsumexp(logits, axis=-1) - (1.0 - epsilon) * true - epsilon * mean

    import tensorflow as tf

    vocab_size = tf.shape(logits)[-1]
    flat_labels = tf.reshape(labels, (-1,))  # (N,)
    indices = tf.stack([tf.range(tf.size(flat_labels)), flat_labels], axis=-1)

    @tf.custom_gradient
    def loss(flat_logits):  # (N, V) -> (N,)
        true = tf.gather_nd(flat_logits, indices)  # (N,)
        mean = tf.reduce_mean(flat_logits, axis=-1)  # (N,)
        peak = tf.reduce_max(flat_logits, axis=-1, keepdims=True)  # (N, 1)
        exps = tf.exp(flat_logits - peak)  # (N, V), kept for the gradient
        total = tf.reduce_sum(exps, axis=-1)  # (N,)
        normaliser = peak[:, 0] + tf.math.log(total)  # logsumexp, (N,)

        def gradient(upstream):  # (N,) -> (N, V)
            uniform = epsilon / tf.cast(vocab_size, tf.float32)
            grad = exps * (upstream / total)[:, None] - uniform * upstream[:, None]
            return tf.tensor_scatter_nd_sub(grad, indices, (1.0 - epsilon) * upstream)

        return normaliser - (1.0 - epsilon) * true - epsilon * mean, gradient

    losses = loss(tf.reshape(logits, (-1, vocab_size)))  # (N,)
    return tf.reshape(losses, tf.shape(labels))


def global_sum(value):
    """Sums `value` over the replicas of the current `tf.distribute` strategy.

    Outside a replica context, with one replica, and on the backends other
    than TensorFlow (where a distributed batch is one array) returns
    `value`. Never returns less than 1, so an all-padding batch yields a
    zero loss.

    Example:

    >>> float(global_sum(np.float32(0.0))), float(global_sum(np.float32(7.0)))
    (1.0, 7.0)
    """
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        context = tf.distribute.get_replica_context()
        if context is not None and context.num_replicas_in_sync > 1:
            value = context.all_reduce(tf.distribute.ReduceOp.SUM, value)
    return ops.maximum(value, 1.0)
