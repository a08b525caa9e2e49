"""A layer of the last axis applied to every position as one 2-D call.

`Dense` on (B, T, D) runs a `tensordot`: on TensorFlow a dozen shape ops
around the matmul, traced into every decoding step; `EinsumDense` runs a
batched matmul whose kernel gradient sums B partial products. Flattening
the positions into rows gives one 2-D matmul forward and backward; the
rows are shaped back with the batch left to -1 where the length is static
(a decoding step), so that no shape op runs there. The training and
batch-1 decoding rows it earned are in benchmarks/README.md ("Plain Keras:
what each removed trick cost or saved").
"""

from keras import ops


def apply_to_positions(layer, inputs):
    """`layer` (e.g. a `Dense`) on each position of `inputs` (B, T, D).

    Equal to `layer(inputs)` for a layer that maps the last axis of each
    position on its own.

    Returns:
        (B, T, units).

    Example:

    >>> import keras
    >>> dense = keras.layers.Dense(4)
    >>> x = np.random.rand(2, 3, 8).astype("float32")
    >>> bool(np.allclose(apply_to_positions(dense, x), dense(x), atol=1e-6))
    True
    """
    rows = layer(ops.reshape(inputs, (-1, inputs.shape[-1])))  # (B * T, units)
    return ops.reshape(rows, (-1, static_length(inputs), rows.shape[-1]))


def static_length(x):
    """The length (axis 1) of `x`: static where known, so that a reshape
    with the batch left to -1 runs no shape ops (as in a decoding step).

    Example:

    >>> static_length(np.zeros((2, 3, 4)))
    3
    """
    return x.shape[1] or ops.shape(x)[1]  # a static 0 cannot size a -1 reshape
