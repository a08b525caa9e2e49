"""A Dense layer that adds its bias apart from the matmul at a few rows."""

import keras
import tensorflow as tf
from keras import ops

# Rows (the product of the input's leading axes) up to which the bias is
# added apart from the matmul. Measured on a 2-core AMD EPYC (Zen 4) in
# float32, a matmul and a separate add against oneDNN's fused kernel: 1.09x
# to 1.26x faster at 1 to 8 rows for the kernels of the small config
# (256 x 256 up to 256 x 1,024), 0.86x to 1.2x at 16 to 64, the same at 256.
FEW_ROWS = 8


@keras.saving.register_keras_serializable(package="keras_transformer")
class Dense(keras.layers.Dense):
    """`keras.layers.Dense`, faster on a CPU for a decoding step's few rows.

    TensorFlow's CPU build rewrites a matmul followed by a bias add into one
    oneDNN kernel (`_MklNativeFusedMatMul`). At a few rows, as in a decoding
    step at batch 1 (one row, or one per beam), that kernel takes longer
    than the plain matmul kernel and a separate add (1.09x to 1.26x as long
    at 1 to 8 rows; README, "Decoding speed"). So where the number of
    rows is known when tracing and at most `FEW_ROWS`, the compute dtype is
    float32 (in bfloat16 the fused kernel is faster at every size) and no
    GPU is visible, the bias goes through a reshape that the rewrite does
    not match. Otherwise, and always in value, this is `keras.layers.Dense`.

    Args:
        **kwargs: `keras.layers.Dense` arguments.

    Example:

    >>> layer = Dense(3, bias_initializer="ones")
    >>> layer(np.zeros((2, 4))).numpy()
    array([[1., 1., 1.],
           [1., 1., 1.]], dtype=float32)
    """

    def call(self, inputs, training=None):
        if self.bias is None or not self._adds_bias_apart(inputs):
            return super().call(inputs, training=training)
        outputs = ops.matmul(inputs, self.kernel)  # (..., units)
        # A unit axis between the matmul and the add hides the pattern.
        outputs = ops.reshape(ops.expand_dims(outputs, -2) + self.bias, outputs.shape)
        return outputs if self.activation is None else self.activation(outputs)

    def _adds_bias_apart(self, inputs):
        rows = tf.TensorShape(inputs.shape[:-1]).num_elements()  # None if unknown
        return (
            rows is not None
            and rows <= FEW_ROWS
            and self.compute_dtype == "float32"
            and not tf.config.list_physical_devices("GPU")
        )
