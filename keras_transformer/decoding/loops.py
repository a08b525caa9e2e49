"""What the decoding loops share: argument checks, buffers, gathers, the loop.

Written in `keras.ops`, so that greedy decoding, beam search and sampling
run on every Keras backend: eagerly and under `jax.jit` on JAX, eagerly on
PyTorch, eagerly and inside a `tf.function` on TensorFlow. Only a cache
whose shapes change from step to step (`cache_shapes`) needs TensorFlow
(`growing_cache`).
"""

import keras
import numpy as np
from keras import ops

from keras_transformer.special_ids import PAD_ID


def check_positive_int(name, value):
    """Raises ValueError unless a Python/NumPy int `value` is >= 1.

    Tensors are not checked (their value is unknown while tracing).

    Args:
        name: the argument's name, for the message.
        value: the value to check.

    Returns:
        `value`, unchanged.

    Example:

    >>> check_positive_int("max_length", 4)
    4
    >>> check_positive_int("beam_size", 0)
    Traceback (most recent call last):
    ...
    ValueError: beam_size must be a positive int, got 0.
    """
    if ops.is_tensor(value):
        return value
    if isinstance(value, bool) or not float(value).is_integer() or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return value


def check_beams(beam_size, num_results):
    """Raises ValueError unless `beam_size` and `num_results` are positive
    ints with `num_results <= beam_size` (tensors are not checked).

    Example:

    >>> check_beams(2, 3)
    Traceback (most recent call last):
    ...
    ValueError: num_results must be <= beam_size=2, got 3.
    """
    check_positive_int("beam_size", beam_size)
    check_positive_int("num_results", num_results)
    if not ops.is_tensor(beam_size) and num_results > beam_size:
        raise ValueError(
            f"num_results must be <= beam_size={beam_size}, got {num_results}."
        )


def sequence_limits(batch_size, max_length, max_lengths=None):
    """Per-example limits on generated tokens, clipped to [1, max_length].

    Args:
        batch_size: B, an int or scalar tensor.
        max_length: the longest output, an int or scalar tensor.
        max_lengths: optional int (B,) per-example limits; static values
            below 1 raise ValueError.

    Returns:
        int32 (B,).

    Example:

    >>> ops.convert_to_numpy(sequence_limits(3, 5, max_lengths=[2, 9, 5]))
    array([2, 5, 5], dtype=int32)
    """
    max_length = ops.cast(max_length, "int32")
    if max_lengths is None:
        return ops.zeros((batch_size,), "int32") + max_length  # (B,)
    if not ops.is_tensor(max_lengths):
        for value in np.asarray(max_lengths).ravel().tolist():
            check_positive_int("each of max_lengths", value)
    limits = ops.cast(max_lengths, "int32")  # (B,)
    return ops.clip(limits, 1, max_length)


def token_counts(ids, pad_id=PAD_ID):
    """The tokens of each row of right-padded `ids` (B, N): int32 (B,).

    Example:

    >>> ops.convert_to_numpy(token_counts(np.array([[5, 6, 0], [7, 0, 0]])))
    array([2, 1], dtype=int32)
    """
    return ops.sum(ops.cast(ops.not_equal(ids, pad_id), "int32"), axis=1)


def start_buffer(start_ids, length, pad_id):
    """The loops' token buffer: each row's given start, then `pad_id`.

    Args:
        start_ids: int (B,), each sequence's first token, or (B, 1 + P):
            its first token and then a prefix of given tokens, right-padded
            with `pad_id`.
        length: the buffer's length, L + 1.
        pad_id: the token of the columns the loop fills.

    Returns:
        int32 (B, `length`): columns of `start_ids` past `length` are
        dropped, so the caller sizes the buffer to hold every prefix.

    Example:

    >>> ops.convert_to_numpy(start_buffer(np.array([[1, 7], [1, 0]]), 4, 0))
    array([[1, 7, 0, 0],
           [1, 0, 0, 0]], dtype=int32)
    """
    start = ops.cast(start_ids, "int32")
    if len(start.shape) == 1:
        start = start[:, None]  # (B, 1)
    start = start[:, :length]  # (B, <= length)
    padding = length - ops.shape(start)[1]
    return ops.pad(start, [[0, 0], [0, padding]], constant_values=pad_id)


def given_tokens(ids, index):
    """The tokens given at column `index + 1` of `ids` (..., L + 1): a
    prefix's next token, or padding where the search chooses it.

    Example:

    >>> ids = np.array([[1, 7, 8], [1, 0, 0]], "int32")
    >>> ops.convert_to_numpy(given_tokens(ids, 0))
    array([7, 0], dtype=int32)
    """
    return ops.take(ids, index + 1, axis=-1)  # (...)


def write_column(ids, index, tokens):
    """Writes `tokens` into column `index` of the last axis of `ids`.

    A select rather than a scatter, so that it compiles with XLA whatever
    `index` is.

    Args:
        ids: int (..., L).
        index: scalar int.
        tokens: int (...), the new column.

    Returns:
        `ids` with `ids[..., index] = tokens`.

    Example:

    >>> ids = write_column(np.zeros((2, 3), "int32"), 1, np.array([7, 8], "int32"))
    >>> ops.convert_to_numpy(ids)
    array([[0, 7, 0],
           [0, 8, 0]], dtype=int32)
    """
    columns = ops.arange(ops.shape(ids)[-1], dtype="int32")  # (L,)
    return ops.where(columns == index, tokens[..., None], ids)  # (..., L)


def take_per_row(x, indices):
    """For each row b, the entries `indices[b]` of `x[b]` (a gather along
    axis 1 per row, as one flat gather).

    Args:
        x: (B, N, ...).
        indices: int (B, M), each in [0, N).

    Returns:
        (B, M, ...).

    Example:

    >>> x = np.array([[10, 11, 12], [20, 21, 22]], "int32")
    >>> ops.convert_to_numpy(take_per_row(x, np.array([[2, 0], [1, 1]])))
    array([[12, 10],
           [21, 21]], dtype=int32)
    """
    shape = ops.shape(x)
    rows = ops.arange(shape[0], dtype="int32")[:, None] * shape[1]  # (B, 1)
    flat_indices = ops.reshape(ops.cast(indices, "int32") + rows, (-1,))  # (B * M,)
    flat = ops.reshape(x, (-1, *shape[2:]))  # (B * N, ...)
    taken = ops.take(flat, flat_indices, axis=0)  # (B * M, ...)
    return ops.reshape(taken, (shape[0], ops.shape(indices)[1], *shape[2:]))


def keep_shapes(new, old):
    """`new` with each leaf given the static shape of the matching leaf of
    `old` where the two differ.

    A loop's variables must keep the static shapes they entered with
    (`tf.while_loop` rejects one that lost a size; some ops, a gather or a
    user's step function, forget them). Where nothing was lost, as always
    on JAX and PyTorch, nothing runs.

    Example:

    >>> keep_shapes((np.zeros((2, 3)),), (np.ones((2, 3)),))[0].shape
    (2, 3)
    """

    def keep(new_leaf, old_leaf):
        if tuple(new_leaf.shape) == tuple(old_leaf.shape):
            return new_leaf
        sizes = zip(old_leaf.shape, ops.shape(new_leaf), strict=True)
        return ops.reshape(
            new_leaf, [size if old is None else old for old, size in sizes]
        )

    return keras.tree.map_structure(keep, tuple(new), tuple(old))


def while_loop(
    cond, body, loop_vars, maximum_iterations, cache_position=None, cache_shapes=None
):
    """`ops.while_loop` over a decoding loop's state, whose shapes stay.

    Args:
        cond, body: as for `ops.while_loop`, over the tuple `loop_vars`.
        loop_vars: a tuple of nests of tensors.
        maximum_iterations: the most steps.
        cache_position: the index in `loop_vars` of the step function's
            cache.
        cache_shapes: None, or for a cache whose shapes change from step to
            step (one that grows; TensorFlow only) a nest like the cache of
            `tf.TensorShape`s with None for the sizes that change.

    Returns:
        The loop variables after the last step.
    """
    if cache_shapes is not None:
        from keras_transformer.decoding import growing_cache

        return growing_cache.while_loop(
            cond, body, loop_vars, maximum_iterations, cache_position, cache_shapes
        )
    return ops.while_loop(
        cond,
        lambda *state: keep_shapes(body(*state), state),
        loop_vars,
        maximum_iterations=maximum_iterations,
    )
