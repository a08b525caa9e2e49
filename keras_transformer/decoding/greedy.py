"""Greedy decoding over a step function, as one `tf.while_loop`.

The loop only knows a step function `next_fn(ids, cache, index)` and an
opaque cache; see `greedy_decode`. The helpers at the top are shared with
`beam_search`.
"""

import numpy as np
import tensorflow as tf

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
    """
    if isinstance(value, tf.Tensor):
        return value
    if isinstance(value, bool) or not float(value).is_integer() or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")
    return value


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

    >>> sequence_limits(3, 5, max_lengths=[2, 9, 5]).numpy()
    array([2, 5, 5], dtype=int32)
    """
    max_length = tf.cast(max_length, tf.int32)
    if max_lengths is None:
        return tf.fill([batch_size], max_length)  # (B,)
    if not isinstance(max_lengths, tf.Tensor):
        for value in np.asarray(max_lengths).ravel().tolist():
            check_positive_int("each of max_lengths", value)
    limits = tf.cast(max_lengths, tf.int32)  # (B,)
    return tf.clip_by_value(limits, 1, max_length)


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

    >>> write_column(tf.zeros((2, 3), tf.int32), 1, tf.constant([7, 8])).numpy()
    array([[0, 7, 0],
           [0, 8, 0]], dtype=int32)
    """
    columns = tf.range(tf.shape(ids)[-1])  # (L,)
    return tf.where(columns == index, tokens[..., None], ids)  # (..., L)


def keep_static_shapes(new, shapes):
    """`new` with the static shapes `shapes`, for `tf.while_loop` variables.

    Some ops (a gather, a user's step function) forget static sizes that
    the loop variables entered with, which `tf.while_loop` rejects.

    Args:
        new: a nest of tensors, the loop variables after one step.
        shapes: the same nest of `tf.TensorShape`s (`loop_shapes`).

    Returns:
        `new`, each leaf checked against and shaped like its shape.

    Example:

    >>> keep_static_shapes((tf.zeros((2, 3)),), (tf.TensorShape([2, 3]),))[0].shape
    TensorShape([2, 3])
    """
    return tf.nest.map_structure(tf.ensure_shape, new, shapes)


def loop_shapes(loop_vars, cache_position, cache_shapes=None):
    """The shapes `tf.while_loop` keeps its variables to: each leaf's own,
    but the cache's leaves (`loop_vars[cache_position]`) keep `cache_shapes`
    past their axis 0 where given (None where a step changes a size, as in
    a cache that grows).

    Example:

    >>> loop_shapes((tf.zeros([2]), tf.zeros([4, 0])), 1, tf.TensorShape([2, None]))
    (TensorShape([2]), TensorShape([4, None]))
    """
    shapes = tf.nest.map_structure(lambda x: x.shape, loop_vars)
    if cache_shapes is None:
        return shapes
    cache = tf.nest.map_structure(
        lambda x, shape: x.shape[:1].concatenate(tf.TensorShape(shape)[1:]),
        loop_vars[cache_position],
        cache_shapes,
    )
    return (*shapes[:cache_position], cache, *shapes[cache_position + 1 :])


def log_probabilities(logits):
    """float32 log-softmax of (B', V) logits."""
    return tf.nn.log_softmax(tf.cast(logits, tf.float32), axis=-1)  # (B', V)


def most_likely(logits):
    """The most likely token of each row of (B, V) logits, and its log-probability.

    Returns:
        `(tokens, log_probs)`: int32 (B,), the first index of each row's
        maximum, and float32 (B,).

    Example:

    >>> tokens, log_probs = most_likely(tf.math.log([[0.2, 0.5, 0.3]]))
    >>> tokens.numpy(), np.round(np.exp(log_probs.numpy()), 4)
    (array([1], dtype=int32), array([0.5], dtype=float32))
    """
    log_probs = log_probabilities(logits)  # (B, V)
    # The logits' argmax: distinct logits may round to one log-probability.
    tokens = tf.argmax(logits, axis=-1, output_type=tf.int32)  # (B,)
    return tokens, tf.gather(log_probs, tokens, batch_dims=1)  # (B,), (B,)


def greedy_decode(
    next_fn,
    start_ids,
    cache,
    max_length,
    end_id,
    pad_id=PAD_ID,
    max_lengths=None,
    choose=most_likely,
    cache_shapes=None,
):
    """Greedy decoding: the most likely token (or `choose`'s) at every step.

    One `tf.while_loop` over fixed-size buffers, so that it traces once in a
    `tf.function` and compiles with `tf.function(jit_compile=True)`. After a
    sequence emits `end_id` it only emits `pad_id`, and the loop stops as
    soon as every sequence has ended. A sequence that reaches its limit in
    `max_lengths` is ended there (without an end token), so a batch decodes
    exactly as its items would alone.

    Args:
        next_fn: `next_fn(ids, cache, index) -> (logits, cache)`. `ids` is
            the int32 (B, max_length + 1) token buffer, column 0 holding the
            start tokens, and `index` a scalar int32 tensor: `next_fn` feeds
            `ids[:, index]` at position `index` and returns float logits
            (B, V) for position `index + 1` and the updated cache.
        start_ids: int (B,), the first token of every sequence.
        cache: any nest of tensors, passed to `next_fn` and never looked
            inside.
        max_length: the most tokens to generate (an int or scalar tensor).
        end_id: the end-of-sequence token.
        pad_id: the token written after the end.
        max_lengths: optional int (B,), per-example limits on generated
            tokens (end token included), clipped to `max_length`.
        choose: `choose(logits) -> (tokens, log_probs)`, the token of each
            row of (B, V) logits and its log-probability, int32 (B,) and
            float32 (B,); the most likely by default, a draw for sampling.
        cache_shapes: for a cache whose shapes change from step to step
            (one that grows), a nest of `tf.TensorShape`s like `cache` with
            None for the sizes that change (axis 0 is the rows, kept);
            by default every leaf keeps the shape it starts with, as XLA
            needs.

    Returns:
        `(ids, scores)`: int32 (B, max_length), the generated tokens without
        the start token (end token included, then padding), and float32
        (B,), the sum of the log-probabilities of the generated tokens.

    Example:

    >>> table = np.log([[.1, .1, .1, .7],    # after token 0: mostly 3
    ...                 [.1, .1, .1, .7],    # after 1 (start): mostly 3
    ...                 [.7, .1, .1, .1],    # after 2 (end)
    ...                 [.1, .1, .6, .2]])   # after 3: mostly the end
    >>> def next_fn(ids, cache, index):  # logits depend on the last token
    ...     return tf.gather(table, ids[:, index]), cache
    >>> ids, scores = greedy_decode(next_fn, [1], cache=(), max_length=5, end_id=2)
    >>> ids.numpy()
    array([[3, 2, 0, 0, 0]], dtype=int32)
    >>> np.round(scores.numpy(), 4)  # log(.7) + log(.6)
    array([-0.8675], dtype=float32)
    """
    check_positive_int("max_length", max_length)
    start_ids = tf.cast(tf.convert_to_tensor(start_ids), tf.int32)  # (B,)
    batch_size = tf.shape(start_ids)[0]
    limits = sequence_limits(batch_size, max_length, max_lengths)  # (B,)
    ids = tf.fill([batch_size, tf.cast(max_length, tf.int32) + 1], pad_id)
    ids = write_column(ids, 0, start_ids)  # (B, L + 1)

    def step(*state):
        return keep_static_shapes(greedy_step(*state), shapes)

    def greedy_step(index, ids, cache, finished, scores):
        logits, cache = next_fn(ids, cache, index)  # (B, V)
        tokens, token_log_probs = choose(logits)  # (B,), (B,)
        tokens = tf.where(finished, pad_id, tokens)
        scores += tf.where(finished, 0.0, token_log_probs)
        ids = write_column(ids, index + 1, tokens)  # (B, L + 1)
        finished |= (tokens == end_id) | (index + 1 >= limits)
        return index + 1, ids, cache, finished, scores

    def not_done(index, ids, cache, finished, scores):
        return tf.logical_not(tf.reduce_all(finished))

    loop_vars = (
        tf.constant(0),
        ids,
        cache,
        tf.zeros([batch_size], tf.bool),
        tf.zeros([batch_size], tf.float32),
    )
    shapes = loop_shapes(loop_vars, 2, cache_shapes)
    _, ids, _, _, scores = tf.while_loop(
        not_done,
        step,
        loop_vars,
        shape_invariants=shapes,
        maximum_iterations=max_length,
    )
    return ids[:, 1:], scores
