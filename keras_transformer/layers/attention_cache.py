"""How `MultiHeadAttention` keeps a key/value cache: its updates and checks.

A cache is `(keys, values)`, (B, h, L, key_dim) and (B, h, L, value_dim).
`cache_update` says how the keys and values of new tokens enter it:
"append" concatenates them (L grows), "write" writes them into a buffer of
fixed length L at `cache_index` (the shapes XLA needs).
"""

import numpy as np
from keras import ops

CACHE_UPDATES = ("append", "write")


def update_cache(cache, new, cache_index, cache_update):
    """`cache` with the keys and values `new`, (B, h, T, d) each, entered
    as `cache_update` says ("append" or "write" at `cache_index`).

    Example:

    >>> empty = np.zeros((1, 2, 0, 4), "float32")
    >>> new = (np.ones((1, 2, 1, 4), "float32"),) * 2
    >>> keys, values = update_cache((empty, empty), new, 0, "append")
    >>> tuple(keys.shape)
    (1, 2, 1, 4)
    """
    if cache_update == "append":
        return tuple(
            ops.concatenate(pair, axis=2) for pair in zip(cache, new, strict=True)
        )  # (B, h, L + T, d)
    return write_positions(cache, new, cache_index)  # (B, h, L, d)


def updated_cache_shape(cache_shape, new_length, cache_update):
    """The shapes of a cache after `update_cache` enters `new_length`
    positions: "append" adds them to L (None where either is unknown);
    "write", and None (a cache attended as given), keep L.

    Args:
        cache_shape: the shapes of `(keys, values)`, (B, h, L, d) each.
        new_length: T, the positions entered (an int or None).
        cache_update: None, "append" or "write".

    Example:

    >>> updated_cache_shape(((1, 2, 3, 4), (1, 2, 3, 6)), 1, "append")
    ((1, 2, 4, 4), (1, 2, 4, 6))
    """

    def updated(shape):
        batch, heads, length, depth = shape
        if cache_update == "append":
            unknown = length is None or new_length is None
            length = None if unknown else length + new_length
        return batch, heads, length, depth

    return tuple(updated(shape) for shape in cache_shape)


def write_positions(cache, updates, index):
    """Each tensor of `cache`, (B, h, L, d), with the matching one of
    `updates`, (B, h, T, d), at positions index + t: the "write" update.

    A scatter rather than `ops.slice_update`, which on TensorFlow is
    `XlaDynamicUpdateSlice`: an op that TensorFlow Serving cannot run
    without XLA (tensorflow/serving#2217), and a SavedModel's `sample`
    signature writes its caches in place. The indices are sums of broadcast
    ranges, flattened to the (N, 3) rows that `ops.scatter_update` takes on
    every backend.

    Example:

    >>> cache = (np.zeros((1, 1, 3, 2), "float32"),)
    >>> written = write_positions(cache, (np.ones((1, 1, 1, 2), "float32"),), 1)
    >>> ops.convert_to_numpy(written[0])[0, 0]
    array([[0., 0.],
           [1., 1.],
           [0., 0.]], dtype=float32)
    """
    batch, heads, length = ops.shape(updates[0])[:3]
    rows = ops.reshape(ops.arange(batch), (-1, 1, 1, 1)) * np.array([1, 0, 0])
    head = ops.reshape(ops.arange(heads), (1, -1, 1, 1)) * np.array([0, 1, 0])
    positions = ops.reshape(ops.arange(length) + index, (1, 1, -1, 1))
    indices = rows + head + positions * np.array([0, 0, 1])  # (B, h, T, 3)
    rows = ops.reshape(indices, (-1, 3))  # (B * h * T, 3)
    return tuple(
        ops.scatter_update(tensor, rows, ops.reshape(new, (-1, new.shape[-1])))
        for tensor, new in zip(cache, updates, strict=True)  # (B * h * T, d)
    )


def check_cache_arguments(cache, cache_index, cache_update, return_attention_scores):
    """Raises ValueError for a combination of cache arguments that means nothing.

    Example:

    >>> check_cache_arguments(None, 0, "append", False)
    Traceback (most recent call last):
    ...
    ValueError: cache_update="append" needs a `cache` and a `cache_index`.
    """
    if cache_update is not None and cache_update not in CACHE_UPDATES:
        raise ValueError(
            f"cache_update must be None or one of {CACHE_UPDATES}, "
            f"got {cache_update!r}."
        )
    if cache_update is not None and (cache is None or cache_index is None):
        raise ValueError(
            f'cache_update="{cache_update}" needs a `cache` and a `cache_index`.'
        )
    if cache is not None and return_attention_scores:
        raise ValueError(
            "return_attention_scores is not supported with a cache; call the "
            "layer without one (a teacher-forced pass) to get the scores."
        )
