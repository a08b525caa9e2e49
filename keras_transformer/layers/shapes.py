"""Static sizes where the graph knows them."""

from keras import ops


def static_length(x):
    """The length (axis 1) of `x`: static where known, so that a reshape
    with the batch left to -1 runs no shape ops (as in a decoding step).

    Example:

    >>> static_length(np.zeros((2, 3, 4)))
    3
    """
    return x.shape[1] or ops.shape(x)[1]  # a static 0 cannot size a -1 reshape
