"""Reshapes that run no shape ops where only the batch size is unknown."""

from keras import ops


def unflatten_rows(flat, like, trailing=None):
    """(N, C) rows, one per position of `like` (B, T, ..., D), as (B, T, ..., C).

    The layers flatten (B, T, D) to rows for a 2-D matmul and reshape back.
    Where every axis but the batch is known when tracing, as in a decoding
    step (T = 1) behind a signature with an unknown batch, the batch axis
    is left to `reshape` (-1) instead of read with shape ops, which would
    run at every step. Otherwise the shape of `like` is read at run time.

    Args:
        flat: (N, C), N = B * T * ...
        like: (B, T, ..., D), whose leading axes to restore.
        trailing: the shape to split C into; default (C,).

    Returns:
        (B, T, ..., *trailing).

    Example:

    >>> tuple(unflatten_rows(np.zeros((6, 4)), np.zeros((2, 3, 8)), (2, 2)).shape)
    (2, 3, 2, 2)
    """
    trailing = tuple(trailing or flat.shape[-1:])
    inner = tuple(like.shape[1:-1])
    if None in inner or 0 in inner:  # -1 cannot size an empty tensor
        return ops.reshape(flat, (*ops.shape(like)[:-1], *trailing))
    return ops.reshape(flat, (-1, *inner, *trailing))


def swap_axes_1_and_2(x):
    """(B, A, C, d) -> (B, C, A, d), without a transpose when A or C is 1.

    Moving an axis of size 1 moves no data, but a transpose would still run
    a kernel at every decoding step, where the length is 1. With A or C
    statically 1 the axes move by a reshape (by dropping and adding the
    axis where d is unknown).
    """
    _, a, c, d = x.shape
    if None in (a, c) or 1 not in (a, c):
        return ops.transpose(x, (0, 2, 1, 3))
    if d is None:
        return ops.expand_dims(ops.squeeze(x, 1 if a == 1 else 2), 2 if a == 1 else 1)
    return ops.reshape(x, (-1, c, a, d))
