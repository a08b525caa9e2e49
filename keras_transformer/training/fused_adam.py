"""Adam whose update of each variable is one TensorFlow kernel."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="keras_transformer")
class FusedAdam(keras.optimizers.Adam):
    """`keras.optimizers.Adam` updating each variable with one fused kernel.

    Keras's Adam updates a variable with about a dozen elementwise ops,
    each a pass over the variable and its two moments; this one calls
    TensorFlow's `ResourceApplyAdam`, which makes one. The arithmetic is
    Keras's (epsilon is added to sqrt(v), the bias corrections fold into the
    step size), so the two optimizers follow the same trajectory, and
    everything else (schedules, gradient accumulation, clipping, loss
    scaling, `tf.distribute`) is Keras's machinery. `amsgrad=True` uses
    Keras's update.

    Args:
        **kwargs: the arguments of `keras.optimizers.Adam`.

    Example:

    >>> optimizer = FusedAdam(learning_rate=0.1)
    >>> weight = keras.Variable([1.0, 2.0])
    >>> optimizer.apply([np.array([1.0, -1.0], "float32")], [weight])
    >>> np.round(np.array(weight), 3)
    array([0.9, 2.1], dtype=float32)
    """

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad:
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        step = tf.cast(self.iterations + 1, dtype)
        beta_1 = tf.cast(self.beta_1, dtype)
        beta_2 = tf.cast(self.beta_2, dtype)
        index = self._get_variable_index(variable)
        tf.raw_ops.ResourceApplyAdam(
            var=variable.handle,
            m=self._momentums[index].handle,
            v=self._velocities[index].handle,
            beta1_power=beta_1**step,
            beta2_power=beta_2**step,
            lr=tf.cast(learning_rate, dtype),
            beta1=beta_1,
            beta2=beta_2,
            epsilon=tf.cast(self.epsilon, dtype),
            grad=tf.cast(tf.convert_to_tensor(gradient), dtype),
        )
