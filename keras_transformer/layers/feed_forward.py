"""The position-wise feed-forward network."""

import keras


@keras.saving.register_keras_serializable(package="keras_transformer")
class FeedForward(keras.layers.Layer):
    """Position-wise feed-forward network, section 3.3.

    FFN(x) = activation(x W1 + b1) W2 + b2, applied to every position alike.
    The output has the input's width.

    Args:
        d_ff: width of the inner layer (2048 in the base model).
        activation: inner activation, ReLU as in the paper by default.
        dropout: dropout rate on the inner activations, in [0, 1).
        kernel_initializer: initializer of both kernels.
        bias_initializer: initializer of both biases.
        **kwargs: base `keras.layers.Layer` arguments.

    Call arguments:
        inputs: (B, T, D).
        training: whether dropout is active.

    Returns:
        (B, T, D).

    Example:

    >>> layer = FeedForward(d_ff=32)
    >>> tuple(layer(np.zeros((2, 3, 8))).shape)
    (2, 3, 8)
    """

    def __init__(
        self,
        d_ff,
        activation="relu",
        dropout=0.0,
        kernel_initializer="glorot_uniform",
        bias_initializer="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if int(d_ff) < 1:
            raise ValueError(f"d_ff must be >= 1, got {d_ff}.")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout}.")
        self.d_ff = int(d_ff)
        self.activation = keras.activations.get(activation)
        self.dropout = dropout
        self.kernel_initializer = keras.initializers.get(kernel_initializer)
        self.bias_initializer = keras.initializers.get(bias_initializer)
        self.supports_masking = True
        self.inner_dense = self._dense(self.d_ff, self.activation, "inner")
        self.dropout_layer = keras.layers.Dropout(
            dropout, dtype=self.dtype_policy, name="inner_dropout"
        )
        self.output_dense = None  # width known in build()

    def build(self, inputs_shape):
        self.inner_dense.build(inputs_shape)
        self.output_dense = self._dense(inputs_shape[-1], None, "output")
        self.output_dense.build((*inputs_shape[:-1], self.d_ff))
        self.built = True

    def _dense(self, units, activation, name):
        return keras.layers.Dense(
            units,
            activation=activation,
            kernel_initializer=self.kernel_initializer,
            bias_initializer=self.bias_initializer,
            dtype=self.dtype_policy,
            name=name,
        )

    def call(self, inputs, training=None):
        hidden = self.inner_dense(inputs)  # (B, T, d_ff)
        hidden = self.dropout_layer(hidden, training=training)
        return self.output_dense(hidden)  # (B, T, D)

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape)  # (B, T, D)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "d_ff": self.d_ff,
                "activation": keras.activations.serialize(self.activation),
                "dropout": self.dropout,
                "kernel_initializer": keras.initializers.serialize(
                    self.kernel_initializer
                ),
                "bias_initializer": keras.initializers.serialize(self.bias_initializer),
            }
        )
        return config
